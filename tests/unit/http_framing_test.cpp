// The service's one framing parser (src/server/http_framing.h), case by case, and the
// differential check against httplib on the same bytes (issue 39, item 1).
#include "server/http_framing.h"

#include <gtest/gtest.h>

#include <string>

#include "httplib_differential.h"

namespace ebb::server {
namespace {

const FramingLimits kLimits{64u << 10, 1u << 20};

RequestFrame Frame(std::string_view bytes) { return FrameRequest(bytes, kLimits); }

// A refusal at once: with the bytes so far, not after waiting for more.
void ExpectRefused(std::string_view bytes, int status, std::string_view code) {
  const RequestFrame f = Frame(bytes);
  ASSERT_EQ(f.kind, Framing::kRefuse) << bytes;
  EXPECT_EQ(f.error.status, status) << f.error.message;
  EXPECT_EQ(f.error.code, code) << f.error.message;
  EXPECT_FALSE(f.error.message.empty());
}

constexpr std::string_view kPost = "POST /v1/embeddings HTTP/1.1\r\nHost: h\r\n";

TEST(HttpFraming, AWellFormedRequestIsFramedAndHttplibAgrees) {
  const std::string req = std::string(kPost) + "Content-Length: 5\r\n\r\nhelloGET / HTTP/1.1";
  const RequestFrame f = Frame(req);
  ASSERT_EQ(f.kind, Framing::kComplete);
  EXPECT_EQ(f.request_len, req.size() - std::string_view("GET / HTTP/1.1").size());
  EXPECT_EQ(f.head.method, "POST");
  EXPECT_EQ(f.head.target, "/v1/embeddings");
  EXPECT_EQ(f.head.content_length, 5u);
  EXPECT_EQ(testing::Disagreement(req, kLimits), "");
}

TEST(HttpFraming, BareLfHeadHidingContentEncodingIsRefusedAtOnce) {
  // The red-team request: the front used to end the head at "\n\n"; httplib skipped the bare-LF
  // lines and read the block after it as headers, gzip and all.
  const std::string smuggled = std::string(kPost) +
                               "Content-Length: 90\n\nContent-Encoding: gzip\r\n"
                               "Content-Length: 64\r\n\r\n";
  ExpectRefused(smuggled, 400, "bad_request");
  // Why: httplib skips the bare-LF lines and takes the block after "\n\n" as the head.
  testing::ReferenceServer ref(1u << 20);
  const testing::HttplibView v =
      ref.Parse("GET / HTTP/1.1\r\nHost: h\r\nX-Seen: 1\n\nX-Hidden: 1\r\n\r\n");
  ASSERT_TRUE(v.handled);
  EXPECT_EQ(v.headers,
            (std::vector<std::pair<std::string, std::string>>{{"host", "h"}, {"x-hidden", "1"}}));
  // At the first bare LF, before the head has ended by any rule.
  ExpectRefused("GET / HTTP/1.1\n", 400, "bad_request");
  ExpectRefused("GET / HTTP/1.1\r\nHost: h\nX: y", 400, "bad_request");
  EXPECT_NE(Frame("GET / HTTP/1.1\r\nHost: h\nX").error.message.find("bare LF"), std::string::npos);
}

TEST(HttpFraming, ABareCrOrAControlByteIsRefused) {
  ExpectRefused("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400, "bad_request");
  ExpectRefused("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01z\r\n\r\n", 400, "bad_request");
  ExpectRefused(std::string("GET /\0 HTTP/1.1\r\n", 17), 400, "bad_request");
  ExpectRefused("GET / HTTP/1.1\r\nX: \x7f\r\n", 400, "bad_request");
  // A CR at the end of what arrived so far may be followed by its LF.
  EXPECT_EQ(Frame("GET / HTTP/1.1\r").kind, Framing::kIncomplete);
}

TEST(HttpFraming, ContentLengthSmuggledBehindContentLengthIsRefused) {
  ExpectRefused(std::string(kPost) + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400,
                "invalid_content_length");
  ExpectRefused(std::string(kPost) + "Content-Length: 5\r\nContent-Length: 7\r\n\r\n", 400,
                "invalid_content_length");
  ExpectRefused(std::string(kPost) + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
                "bad_request");
  ExpectRefused(
      std::string(kPost) + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
      "unsupported_transfer_encoding");
  for (const char* bad : {"-1", "1e3", "0x10", "12abc", "1%30", ""}) {
    ExpectRefused(std::string(kPost) + "Content-Length: " + bad + "\r\n\r\n", 400,
                  "invalid_content_length");
  }
}

TEST(HttpFraming, ContentEncodingIsRefusedWhereverItIsAndHowEverItIsSpelled) {
  for (const char* enc : {"gzip", "GZIP", "%67zip", "br", "identity, br", "deflate"}) {
    ExpectRefused(std::string(kPost) + "Content-Encoding: " + enc + "\r\nContent-Length: 0\r\n\r\n",
                  415, "unsupported_content_encoding");
  }
  // After other headers, and when the body never comes.
  ExpectRefused(std::string(kPost) + "Content-Length: 9\r\nX: y\r\ncontent-encoding: gzip\r\n\r\n",
                415, "unsupported_content_encoding");
  EXPECT_EQ(
      Frame(std::string(kPost) + "Content-Encoding: identity\r\nContent-Length: 0\r\n\r\n").kind,
      Framing::kComplete);
}

// Found by the fuzzer (fuzz/corpus/http_framing/multipart-no-boundary): httplib refuses a
// multipart/form-data request without a boundary and parses one with a boundary into files, so
// the front must not pass either on.
TEST(HttpFraming, MultipartBodiesAreRefusedHoweverTheTypeIsSpelled) {
  for (const char* type : {"multipart/form-data", "Multipart/Form-Data; boundary=x",
                           "multipart/form-dataenco[dt-Length: 3"}) {
    ExpectRefused(std::string(kPost) + "Content-Type: " + type + "\r\nContent-Length: 2\r\n\r\n{}",
                  415, "unsupported_media_type");
  }
  const std::string fuzz_found =
      "POST /v1/b%ds HTTP/1.1\r\nHost:2\r\nContent-Type: multipart/form-dataenco[dt-Length: "
      "3\r\n\r\n{d";
  ExpectRefused(fuzz_found, 415, "unsupported_media_type");
  EXPECT_EQ(ebb::testing::Disagreement(fuzz_found, kLimits), "");
  EXPECT_EQ(
      Frame(std::string(kPost) + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
          .kind,
      Framing::kComplete);
}

// Found by the fuzzer (fuzz/corpus/http_framing/path-encoded-cr): httplib refuses a path whose
// decoding holds a CR or LF; other escapes, and a line break encoded in the query, pass.
TEST(HttpFraming, APathThatEncodesALineBreakIsRefused) {
  for (const char* esc : {"%0d", "%0D", "%0a", "%0A"}) {
    const std::string req =
        std::string("POST /v1/b") + esc + "s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    ExpectRefused(req, 400, "bad_request");
    EXPECT_EQ(ebb::testing::Disagreement(req, kLimits), "") << esc;
  }
  for (const char* ok : {"/v1/b%09s", "/v1/b%20s", "/v1/b?x=%0d"}) {
    const std::string req =
        std::string("POST ") + ok + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    EXPECT_EQ(Frame(req).kind, Framing::kComplete) << ok;
    EXPECT_EQ(ebb::testing::Disagreement(req, kLimits), "") << ok;
  }
}

TEST(HttpFraming, HeaderNamesMustBeTokensWithNoSpaceBeforeTheColon) {
  ExpectRefused(std::string(kPost) + "Content-Encoding : gzip\r\n\r\n", 400, "bad_request");
  ExpectRefused(std::string(kPost) + "Bad Name: x\r\n\r\n", 400, "bad_request");
  ExpectRefused(std::string(kPost) + "NoColon\r\n\r\n", 400, "bad_request");
  ExpectRefused(std::string(kPost) + "X: a\r\n folded\r\n\r\n", 400, "bad_request");
}

TEST(HttpFraming, Http11WithoutHostGets400) {
  ExpectRefused("GET /health HTTP/1.1\r\n\r\n", 400, "bad_request");
  EXPECT_NE(Frame("GET /health HTTP/1.1\r\n\r\n").error.message.find("Host"), std::string::npos);
  ExpectRefused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_request");
  EXPECT_EQ(Frame("GET /health HTTP/1.0\r\n\r\n").kind, Framing::kComplete);
}

TEST(HttpFraming, LongLinesGetTheirOwnStatusesAndMessages) {
  // A 60 KB URL: 414 uri_too_long (it was 414 with ebb_code "internal").
  ExpectRefused("GET /" + std::string(60000, 'a') + " HTTP/1.1\r\n", 414, "uri_too_long");
  // Before the line has even ended.
  ExpectRefused("GET /" + std::string(9000, 'a'), 414, "uri_too_long");
  // A header line over 8 KiB: 431 naming the limit (it was httplib's opaque 400).
  const RequestFrame f =
      Frame("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(9000, 'b') + "\r\n\r\n");
  ASSERT_EQ(f.kind, Framing::kRefuse);
  EXPECT_EQ(f.error.status, 431);
  EXPECT_EQ(f.error.code, "header_too_large");
  EXPECT_NE(f.error.message.find("8192"), std::string::npos);
  // Exactly at httplib's limit (8192 bytes with CRLF) is accepted, and httplib agrees.
  const std::string at =
      "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(8192 - 5, 'c') + "\r\n\r\n";
  EXPECT_EQ(Frame(at).kind, Framing::kComplete);
  EXPECT_EQ(testing::Disagreement(at, kLimits), "");
  // The whole head.
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  while (many.size() < (70u << 10)) many += "X: " + std::string(1000, 'd') + "\r\n";
  ExpectRefused(many, 431, "headers_too_large");
}

TEST(HttpFraming, RequestLineMustBeMethodTargetVersion) {
  ExpectRefused("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad_request");
  ExpectRefused("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 400, "bad_request");
  ExpectRefused("BREW / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad_request");
  ExpectRefused("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bad_request");
  ExpectRefused("GET /\r\n\r\n", 400, "bad_request");
}

TEST(HttpFraming, ChunkedBodiesAreFramedStrictly) {
  const std::string head = std::string(kPost) + "Transfer-Encoding: chunked\r\n\r\n";
  const std::string ok = head + "5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\n\r\n";
  const RequestFrame f = Frame(ok);
  ASSERT_EQ(f.kind, Framing::kComplete);
  EXPECT_EQ(f.request_len, ok.size());
  EXPECT_EQ(testing::Disagreement(ok, kLimits), "");
  ExpectRefused(head + "5\nhello\r\n0\r\n\r\n", 400, "bad_chunk");
  ExpectRefused(head + "5;a\nb\r\nhello\r\n0\r\n\r\n", 400, "bad_chunk");
  ExpectRefused(head + "0x5\r\nhello\r\n0\r\n\r\n", 400, "bad_chunk");
  ExpectRefused(head + "5\r\nhelloXX0\r\n\r\n", 400, "bad_chunk");
  ExpectRefused(head + "0\r\nTrailer: x\r\n\r\n", 400, "bad_chunk");
  ExpectRefused(head + "100001\r\n", 413, "request_too_large");
  EXPECT_EQ(Frame(head + "5\r\nhel").kind, Framing::kIncomplete);
  EXPECT_EQ(Frame(head + "0\r\n\r").kind, Framing::kIncomplete);
}

TEST(HttpFraming, ABodyOverTheLimitIsRefusedFromItsHead) {
  ExpectRefused(std::string(kPost) + "Content-Length: 1048577\r\n\r\n", 413, "request_too_large");
}

TEST(HttpFraming, HttplibSeesTheSameHeadersIncludingPercentDecodedValues) {
  // httplib decodes %XX in header values; the framing headers allow no '%', and the rest are
  // compared after httplib's decoding.
  for (const std::string& req : {
           std::string(kPost) + "Authorization: Bearer %73ecret\r\nContent-Length: 2\r\n\r\n{}",
           std::string("DELETE /v1/models/a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx"),
           std::string("OPTIONS * HTTP/1.1\r\nHost: h\r\nX-Empty:\r\n\r\n"),
           std::string("GET /a?b=%20 HTTP/1.0\r\nX-Tab:\tv\t\r\n\r\n"),
           std::string(kPost) + "Expect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
       }) {
    EXPECT_EQ(Frame(req).kind, Framing::kComplete) << req;
    EXPECT_EQ(testing::Disagreement(req, kLimits), "") << req;
  }
}

}  // namespace
}  // namespace ebb::server
