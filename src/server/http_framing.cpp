#include "server/http_framing.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/strings.h"

namespace ebb::server {
namespace {

using internal::EscapeForMessage;

constexpr std::string_view kRfc = " (RFC 9112)";

HeadResult Refuse(int status, std::string code, std::string message) {
  HeadResult r;
  r.kind = Framing::kRefuse;
  r.error = FramingError{status, std::move(code), std::move(message)};
  return r;
}

BodyResult RefuseBody(int status, std::string code, std::string message) {
  BodyResult r;
  r.kind = Framing::kRefuse;
  r.error = FramingError{status, std::move(code), std::move(message)};
  return r;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A byte no line of a head may hold: controls but HTAB (CR and LF are handled as line ends).
bool IsControl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

// RFC 9110 tchar.
bool IsTokenChar(unsigned char c) {
  if (std::isalnum(c) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsKnownMethod(std::string_view m) {
  // The methods httplib 0.11 accepts (others it answers 400 itself).
  for (std::string_view k :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"}) {
    if (m == k) return true;
  }
  return false;
}

// A piece of the request in a message: control and non-UTF-8 bytes escaped, at most 40 bytes.
std::string Shown(std::string_view s) { return EscapeForMessage(s, 40); }

// The first byte of `line` that no head may hold, or npos.
size_t FindControl(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (IsControl(static_cast<unsigned char>(line[i]))) return i;
  }
  return std::string_view::npos;
}

HeadResult ControlByte(unsigned char c, bool request_line) {
  if (c == '\r') {
    return Refuse(400, "bad_request",
                  std::string("a line of the request head holds a bare CR; end every line with "
                              "CRLF and send no other CR") +
                      std::string(kRfc));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = "0x";
  hex += kHex[c >> 4];
  hex += kHex[c & 15];
  return Refuse(400, "bad_request",
                std::string(request_line ? "the request line" : "a header line") +
                    " holds the control byte " + hex +
                    "; send printable characters only (percent-encode them in a URL)");
}

HeadResult TooLong(bool request_line, size_t limit) {
  if (request_line) {
    return Refuse(414, "uri_too_long",
                  "the request line is longer than " + std::to_string(limit) +
                      " bytes; send a shorter URL (put large inputs in the request body)");
  }
  return Refuse(431, "header_too_large",
                "a header line is longer than " + std::to_string(limit) +
                    " bytes; send shorter header values");
}

HeadResult HeadTooLarge(size_t limit) {
  return Refuse(431, "headers_too_large",
                "the request line and headers are larger than " + std::to_string(limit) +
                    " bytes; send fewer or shorter headers");
}

// METHOD SP TARGET SP VERSION, single spaces.
HeadResult ParseRequestLine(std::string_view line, RequestHead& h) {
  const size_t sp = line.find(' ');
  const size_t sp2 = sp == std::string_view::npos ? sp : line.find(' ', sp + 1);
  if (line.find('\t') != std::string_view::npos || sp == std::string_view::npos ||
      sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
      sp == 0 || sp2 == sp + 1 || sp2 + 1 == line.size()) {
    return Refuse(
        400, "bad_request",
        "the request line '" + Shown(line) + "' is not 'METHOD /path HTTP/1.1' (single spaces)");
  }
  h.method = std::string(line.substr(0, sp));
  h.target = std::string(line.substr(sp + 1, sp2 - sp - 1));
  h.version = std::string(line.substr(sp2 + 1));
  // Origin-form (or "*"), and at most one '?': httplib refuses a second one, and reads a target
  // that does not start with '/' differently.
  if ((h.target.front() != '/' && h.target != "*") ||
      std::count(h.target.begin(), h.target.end(), '?') > 1) {
    return Refuse(400, "bad_request",
                  "the request target '" + Shown(h.target) +
                      "' is not a path starting with '/' with at most one '?'; percent-encode "
                      "other '?' as %3F");
  }
  if (h.target.find('#') != std::string::npos) {
    return Refuse(400, "bad_request",
                  "the request target '" + Shown(h.target) +
                      "' holds a fragment ('#'); send the path without it");
  }
  // httplib decodes the path and refuses one that then holds a line break (found by the fuzzer:
  // fuzz/corpus/http_framing/path-encoded-cr); the query string is not affected.
  const std::string_view path = std::string_view(h.target).substr(0, h.target.find('?'));
  for (size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] == '%' && path[i + 1] == '0' &&
        (path[i + 2] == 'a' || path[i + 2] == 'A' || path[i + 2] == 'd' || path[i + 2] == 'D')) {
      return Refuse(400, "bad_request",
                    "the request path '" + Shown(path) +
                        "' encodes a line break (%0A or %0D); no ebb route has one");
    }
  }
  if (!IsKnownMethod(h.method)) {
    return Refuse(400, "bad_request",
                  "the method '" + Shown(h.method) +
                      "' is not supported; use GET, POST, PATCH, DELETE or OPTIONS");
  }
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") {
    return Refuse(400, "bad_request",
                  "the HTTP version '" + Shown(h.version) + "' is not supported; send HTTP/1.1");
  }
  return {};
}

// One header field: checks it and records what frames the request.
struct FieldState {
  int hosts = 0;
  int lengths = 0;
  int transfer_encodings = 0;
};

HeadResult ParseField(std::string_view line, const FramingLimits& limits, RequestHead& h,
                      FieldState& st) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Refuse(400, "bad_request",
                  std::string("a header line starts with white space (obs-fold); put each "
                              "header on one line") +
                      std::string(kRfc));
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return Refuse(400, "bad_request",
                  "the header line '" + Shown(line) + "' has no ':'; send 'Name: value'");
  }
  const std::string_view name = line.substr(0, colon);
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return IsTokenChar(static_cast<unsigned char>(c));
      })) {
    const bool space = !name.empty() && (name.back() == ' ' || name.back() == '\t');
    return Refuse(
        400, "bad_request",
        space ? "the header '" + Shown(TrimSpace(name)) +
                    "' has white space before its ':'; remove it" + std::string(kRfc)
              : "the header name '" + Shown(name) + "' is not a token; use letters, digits and -");
  }
  for (std::string_view own : {"remote_addr", "remote_port", "local_addr", "local_port"}) {
    // httplib adds these to every request as headers; a client's own would be read first.
    if (EqualsNoCase(name, own)) {
      return Refuse(400, "bad_request",
                    "the header '" + Shown(name) + "' is reserved by the service; do not send it");
    }
  }
  const std::string_view value = TrimSpace(line.substr(colon + 1));
  h.headers.emplace_back(std::string(name), std::string(value));
  if (EqualsNoCase(name, "content-length")) {
    if (++st.lengths > 1) {
      return Refuse(400, "invalid_content_length",
                    "the request has more than one Content-Length header; send one");
    }
    if (value.empty() || value.size() > 19 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Refuse(400, "invalid_content_length",
                    "Content-Length '" + Shown(value) + "' is not a number of bytes");
    }
    h.content_length = std::stoull(std::string(value));
  } else if (EqualsNoCase(name, "transfer-encoding")) {
    if (++st.transfer_encodings > 1) {
      return Refuse(400, "unsupported_transfer_encoding",
                    "the request has more than one Transfer-Encoding header; send one: chunked");
    }
    if (!EqualsNoCase(value, "chunked")) {
      return Refuse(400, "unsupported_transfer_encoding",
                    "Transfer-Encoding '" + Shown(value) +
                        "' is not supported: send 'chunked' or a Content-Length");
    }
    h.chunked = true;
  } else if (EqualsNoCase(name, "content-encoding")) {
    if (!EqualsNoCase(value, "identity")) {
      return Refuse(415, "unsupported_content_encoding",
                    "compressed request bodies (Content-Encoding: " + Shown(value) +
                        ") are not accepted: send the body uncompressed, at most " +
                        std::to_string(limits.max_body_bytes) + " bytes (--max-body)");
    }
  } else if (EqualsNoCase(name, "content-type")) {
    // httplib parses a multipart/form-data body itself (into files, not the body the handlers
    // read) and refuses one without a boundary: such a request would mean something else to the
    // handlers than to the front. ebb's API takes JSON bodies only.
    constexpr std::string_view kMultipart = "multipart/form-data";
    if (value.size() >= kMultipart.size() &&
        EqualsNoCase(value.substr(0, kMultipart.size()), kMultipart)) {
      return Refuse(415, "unsupported_media_type",
                    "multipart/form-data bodies are not accepted: send JSON (Content-Type: "
                    "application/json)");
    }
  } else if (EqualsNoCase(name, "expect")) {
    h.expect_continue = EqualsNoCase(value, "100-continue");
  } else if (EqualsNoCase(name, "host")) {
    ++st.hosts;
  }
  return {};
}

}  // namespace

FramingError BodyTooLarge(size_t max_body_bytes) {
  return FramingError{413, "request_too_large",
                      "the request body is larger than the service's limit of " +
                          std::to_string(max_body_bytes) +
                          " bytes; send less, or restart the service with a larger --max-body"};
}

HeadResult ParseRequestHead(std::string_view buf, const FramingLimits& limits) {
  RequestHead h;
  FieldState st;
  size_t pos = 0;
  bool request_line = true;
  while (true) {
    const size_t limit = request_line ? kMaxRequestLineBytes : kMaxHeaderLineBytes;
    const size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) {
      // A partial line: refuse what its bytes already show (a CR must be followed by LF).
      const std::string_view part = buf.substr(pos);
      for (size_t i = 0; i < part.size(); ++i) {
        const auto c = static_cast<unsigned char>(part[i]);
        if (c == '\r' && i + 1 == part.size()) break;
        if (IsControl(c)) return ControlByte(c, request_line);
      }
      if (part.size() > limit) return TooLong(request_line, limit);
      if (buf.size() > limits.max_head_bytes) return HeadTooLarge(limits.max_head_bytes);
      return {};
    }
    if (nl == pos || buf[nl - 1] != '\r') {
      return Refuse(400, "bad_request",
                    std::string(request_line ? "the request line" : "a header line") +
                        " ends in a bare LF; end every line of the head with CRLF" +
                        std::string(kRfc));
    }
    const std::string_view line = buf.substr(pos, nl - 1 - pos);
    if (nl + 1 - pos > limit) return TooLong(request_line, limit);
    if (nl + 1 > limits.max_head_bytes) return HeadTooLarge(limits.max_head_bytes);
    if (const size_t bad = FindControl(line); bad != std::string_view::npos) {
      return ControlByte(static_cast<unsigned char>(line[bad]), request_line);
    }
    pos = nl + 1;
    if (request_line) {
      request_line = false;
      HeadResult r = ParseRequestLine(line, h);
      if (r.kind == Framing::kRefuse) return r;
      continue;
    }
    if (line.empty()) break;  // the head's end
    HeadResult r = ParseField(line, limits, h, st);
    if (r.kind == Framing::kRefuse) return r;
  }
  if (st.hosts > 1) {
    return Refuse(400, "bad_request", "the request has more than one Host header; send one");
  }
  if (st.hosts == 0 && h.version == "HTTP/1.1") {
    return Refuse(
        400, "bad_request",
        "an HTTP/1.1 request needs a Host header; send 'Host: name:port'" + std::string(kRfc));
  }
  if (h.chunked && st.lengths > 0) {
    return Refuse(400, "bad_request",
                  "both Content-Length and Transfer-Encoding are set; send one of them");
  }
  if (h.content_length > limits.max_body_bytes) {
    HeadResult r;
    r.kind = Framing::kRefuse;
    r.error = BodyTooLarge(limits.max_body_bytes);
    return r;
  }
  h.head_len = pos;
  HeadResult r;
  r.kind = Framing::kComplete;
  r.head = std::move(h);
  return r;
}

BodyResult ScanChunkedBody(std::string_view b, ChunkScan& scan, size_t max_body_bytes) {
  while (true) {
    const size_t nl = b.find('\n', scan.pos);
    if (nl == std::string_view::npos) {
      if (b.size() - scan.pos > kMaxChunkLineBytes) {
        return RefuseBody(
            400, "bad_chunk",
            "a chunk-size line is longer than " + std::to_string(kMaxChunkLineBytes) + " bytes");
      }
      return {};
    }
    if (nl == scan.pos || b[nl - 1] != '\r') {
      return RefuseBody(400, "bad_chunk", "a chunk-size line ends in a bare LF; end it with CRLF");
    }
    const std::string_view line = b.substr(scan.pos, nl - 1 - scan.pos);
    if (FindControl(line) != std::string_view::npos) {
      return RefuseBody(400, "bad_chunk", "a chunk-size line holds a control byte");
    }
    const std::string_view hex = TrimSpace(line.substr(0, line.find(';')));
    if (hex.empty() || hex.size() > 15 || !std::all_of(hex.begin(), hex.end(), [](char ch) {
          return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
        })) {
      return RefuseBody(400, "bad_chunk",
                        "the chunk size '" + Shown(line) + "' is not a hexadecimal number");
    }
    const size_t size = std::stoull(std::string(hex), nullptr, 16);
    const size_t data = nl + 1;
    if (size == 0) {
      // The last chunk, then the empty line; trailers are refused (httplib would fail on them).
      if (b.size() < data + 2) {
        if (b.size() == data || b[data] == '\r') return {};
        return RefuseBody(400, "bad_chunk",
                          "the chunked body has trailer fields, which are not accepted; end it "
                          "with '0' CRLF CRLF");
      }
      if (b.compare(data, 2, "\r\n") != 0) {
        return RefuseBody(400, "bad_chunk",
                          "the chunked body has trailer fields, which are not accepted; end it "
                          "with '0' CRLF CRLF");
      }
      BodyResult r;
      r.kind = Framing::kComplete;
      r.request_len = data + 2;
      return r;
    }
    if (scan.total + size > max_body_bytes) {
      BodyResult r;
      r.kind = Framing::kRefuse;
      r.error = BodyTooLarge(max_body_bytes);
      return r;
    }
    if (b.size() < data + size + 2) return {};
    if (b.compare(data + size, 2, "\r\n") != 0) {
      return RefuseBody(400, "bad_chunk", "a chunk's data is not followed by CRLF");
    }
    scan.total += size;
    scan.pos = data + size + 2;
  }
}

RequestFrame FrameRequest(std::string_view buf, const FramingLimits& limits) {
  RequestFrame f;
  HeadResult h = ParseRequestHead(buf, limits);
  if (h.kind != Framing::kComplete) {
    f.kind = h.kind;
    f.error = std::move(h.error);
    return f;
  }
  f.head = std::move(h.head);
  if (f.head.chunked) {
    ChunkScan scan{f.head.head_len, 0};
    BodyResult b = ScanChunkedBody(buf, scan, limits.max_body_bytes);
    f.kind = b.kind;
    f.request_len = b.request_len;
    f.error = std::move(b.error);
    return f;
  }
  if (buf.size() >= f.head.head_len + f.head.content_length) {
    f.kind = Framing::kComplete;
    f.request_len = f.head.head_len + f.head.content_length;
  }
  return f;
}

}  // namespace ebb::server
