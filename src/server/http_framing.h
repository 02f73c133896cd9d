// The one HTTP/1.1 request framing parser of `ebb serve` (docs/http_api.md#who-parses-what): a
// pure function over bytes, with no socket and no state beyond what the caller passes in.
//
// Contract:
// - The event-loop front (http_front.h) decides with it where a request ends; httplib then parses
//   only those bytes. The rules are strict enough that every request accepted here means the same
//   to httplib 0.11 byte for byte: the same request line, the same header fields, the same body.
//   What httplib does that they answer (cpp-httplib 0.11.4, httplib.h): detail::read_headers
//   skips a line that does not end in CRLF (CPPHTTPLIB_ALLOW_LF_AS_LINE_TERMINATOR is off) and
//   reads on; detail::parse_header %-decodes values (decode_url) and drops empty ones;
//   Server::parse_request_line fails on a second '?' and trims tabs; Server::process_request
//   adds REMOTE_ADDR and friends as headers; detail::read_content_chunked fails on trailers;
//   detail::read_content inflates gzip/deflate/br bodies with no size limit.
//   fuzz/http_framing_fuzz.cpp feeds the same bytes to both and fails on any disagreement.
// - Refused (with the status and a message that names the problem and the fix):
//   - a line of the head that ends in a bare LF, a bare CR, or a control byte (400): httplib
//     skips such lines where this parser would read them, which is how a header is smuggled;
//   - a request line over 8 KiB (414), a header line over 8 KiB (431), a head over
//     max_head_bytes (431): httplib's own limits, answered clearly here;
//   - a request line that is not `METHOD SP TARGET SP HTTP/1.x` with a method httplib knows;
//   - a header name that is not a token or has white space before its colon; obs-fold;
//   - HTTP/1.1 without exactly one Host (RFC 9112 §3.2), more than one Host in any version;
//   - a second Content-Length or Transfer-Encoding, both together, a Content-Length that is
//     not decimal, a Transfer-Encoding other than `chunked` (400); a body over max_body_bytes
//     (413);
//   - any Content-Encoding but `identity` (415): nothing is ever inflated;
//   - a chunked body with a bad size line, a chunk not followed by CRLF, or trailers (400).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ebb::server {

// httplib's limits (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH, CPPHTTPLIB_HEADER_MAX_LENGTH), counted
// with the line's CRLF, as httplib counts them.
inline constexpr size_t kMaxRequestLineBytes = 8192;
inline constexpr size_t kMaxHeaderLineBytes = 8192;
// A chunk-size line (size, extensions, CRLF).
inline constexpr size_t kMaxChunkLineBytes = 1024;

struct FramingLimits {
  size_t max_head_bytes = 64u << 10;  // request line and headers together
  size_t max_body_bytes = 8u << 20;
};

enum class Framing { kIncomplete, kComplete, kRefuse };

struct FramingError {
  int status = 0;
  std::string code;     // ebb_code of the answer
  std::string message;  // names the problem and the fix
};

struct RequestHead {
  std::string method;
  std::string target;   // as sent (path and query)
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  // Every header field in order: the name as sent, the value without surrounding SP/HTAB.
  std::vector<std::pair<std::string, std::string>> headers;
  size_t head_len = 0;  // bytes up to and including the empty line
  bool chunked = false;
  size_t content_length = 0;  // 0 when chunked or absent
  bool expect_continue = false;
};

struct HeadResult {
  Framing kind = Framing::kIncomplete;
  RequestHead head;    // kComplete only
  FramingError error;  // kRefuse only
};

// Parses the head at the start of `buf` (which may hold only part of it). kIncomplete: more
// bytes are needed; a refusal is given as soon as the bytes so far show one (a bare LF is
// refused before the head ends).
HeadResult ParseRequestHead(std::string_view buf, const FramingLimits& limits);

// Where a chunked body has been scanned to; starts at the head's end. Lets a body that arrives
// in pieces be scanned once.
struct ChunkScan {
  size_t pos = 0;    // offset in the buffer of the next chunk-size line
  size_t total = 0;  // data bytes of the chunks scanned so far
};

struct BodyResult {
  Framing kind = Framing::kIncomplete;
  size_t request_len = 0;  // kComplete: the request's bytes, head and body
  FramingError error;      // kRefuse only
};

// Scans the chunks of `buf` from `scan` on, updating it; the data counts against max_body_bytes
// as it arrives.
BodyResult ScanChunkedBody(std::string_view buf, ChunkScan& scan, size_t max_body_bytes);

// The whole request at the start of `buf`: its head, then its body's end.
struct RequestFrame {
  Framing kind = Framing::kIncomplete;
  RequestHead head;        // kComplete, and kIncomplete once the head is complete
  size_t request_len = 0;  // kComplete
  FramingError error;      // kRefuse
};
RequestFrame FrameRequest(std::string_view buf, const FramingLimits& limits);

// The refusal of a body over the limit (413), shared by the chunk scan and the front.
FramingError BodyTooLarge(size_t max_body_bytes);

}  // namespace ebb::server
