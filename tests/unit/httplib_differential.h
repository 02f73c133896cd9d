// The differential check between ebb's framing parser (src/server/http_framing.h) and the
// parser that runs the handlers (the system cpp-httplib 0.11), over the same bytes. Shared by
// tests/unit/http_framing_test.cpp and fuzz/http_framing_fuzz.cpp.
//
// Contract: Disagreement(bytes) returns "" when every request FrameRequest accepts means the
// same to httplib (method, target, header fields after httplib's %XX decoding, body, and no byte
// read past the request's end), else a description. A request FrameRequest refuses or finds
// incomplete never reaches httplib in the service, so it is not compared.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "httplib.h"
#include "server/http_framing.h"

namespace ebb::testing {

// httplib's view of one request.
struct HttplibView {
  bool handled = false;  // a route handler ran
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names, sorted
  std::string body;
  size_t consumed = 0;  // bytes httplib read
};

// A Stream over a fixed buffer; writes (the response) are dropped.
class BytesStream final : public httplib::Stream {
 public:
  explicit BytesStream(std::string_view bytes) : bytes_(bytes) {}
  bool is_readable() const override { return pos_ < bytes_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - pos_);
    std::copy_n(bytes_.data() + pos_, n, ptr);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  using httplib::Stream::write;
  ssize_t write(const char*, size_t size) override { return static_cast<ssize_t>(size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 1;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 2;
  }
  socket_t socket() const override { return -1; }
  size_t consumed() const { return pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class ReferenceServer final : public httplib::Server {
 public:
  explicit ReferenceServer(size_t max_body) {
    set_payload_max_length(max_body);
    const auto h = [this](const httplib::Request& req, httplib::Response& res) {
      view_->handled = true;
      view_->method = req.method;
      view_->target = req.target;
      view_->body = req.body;
      for (const auto& [k, v] : req.headers) {
        std::string name = k;
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        // httplib adds these itself.
        if (name == "remote_addr" || name == "remote_port" || name == "local_addr" ||
            name == "local_port") {
          continue;
        }
        view_->headers.emplace_back(name, v);
      }
      std::sort(view_->headers.begin(), view_->headers.end());
      res.set_content("ok", "text/plain");
    };
    Get(".*", h);
    Post(".*", h);
    Put(".*", h);
    Patch(".*", h);
    Delete(".*", h);
    Options(".*", h);
  }

  HttplibView Parse(std::string_view bytes) {
    HttplibView v;
    view_ = &v;
    BytesStream strm(bytes);
    bool closed = false;
    process_request(strm, true, closed, nullptr);
    v.consumed = strm.consumed();
    view_ = nullptr;
    return v;
  }

 private:
  HttplibView* view_ = nullptr;
};

// The body of an accepted chunked request, decoded.
inline std::string Dechunk(std::string_view b, size_t pos) {
  std::string out;
  while (true) {
    const size_t eol = b.find("\r\n", pos);
    const std::string_view line = b.substr(pos, eol - pos);
    const size_t size = std::stoull(std::string(line.substr(0, line.find(';'))), nullptr, 16);
    if (size == 0) return out;
    out.append(b.substr(eol + 2, size));
    pos = eol + 2 + size + 2;
  }
}

inline std::string Disagreement(std::string_view bytes, const server::FramingLimits& limits) {
  const server::RequestFrame f = server::FrameRequest(bytes, limits);
  if (f.kind != server::Framing::kComplete) return "";
  const server::RequestHead& h = f.head;
  // The service hands httplib exactly the request's bytes (http_front.cpp, ConnStream).
  const std::string_view request = bytes.substr(0, f.request_len);
  static ReferenceServer* ref = new ReferenceServer(limits.max_body_bytes);
  const HttplibView v = ref->Parse(request);
  if (v.consumed > f.request_len) return "httplib read past the request's end";
  const bool routed = h.method == "GET" || h.method == "HEAD" || h.method == "POST" ||
                      h.method == "PUT" || h.method == "PATCH" || h.method == "DELETE" ||
                      h.method == "OPTIONS";
  if (!routed) return "";  // httplib has no route for it: answered with an error, never served
  if (!v.handled) return "the front accepted a request httplib refused";
  if (v.method != h.method) return "method: '" + h.method + "' vs httplib's '" + v.method + "'";
  if (v.target != h.target) return "target: '" + h.target + "' vs httplib's '" + v.target + "'";
  std::vector<std::pair<std::string, std::string>> ours;
  bool has_length = false;
  for (const auto& [k, value] : h.headers) {
    std::string name = k;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    has_length = has_length || name == "content-length";
    const std::string decoded = httplib::detail::decode_url(value, false);
    if (!value.empty()) ours.emplace_back(name, decoded);  // httplib drops empty values
  }
  std::sort(ours.begin(), ours.end());
  if (ours != v.headers) {
    std::string d = "headers differ: front";
    for (const auto& [k, x] : ours) d += " [" + k + ": " + x + "]";
    d += "; httplib";
    for (const auto& [k, x] : v.headers) d += " [" + k + ": " + x + "]";
    return d;
  }
  const bool reads_body = h.method == "POST" || h.method == "PUT" || h.method == "PATCH" ||
                          (h.method == "DELETE" && has_length);
  std::string body;
  if (reads_body) {
    body = h.chunked ? Dechunk(bytes, h.head_len)
                     : std::string(bytes.substr(h.head_len, h.content_length));
  }
  if (v.body != body) {
    return "body: " + std::to_string(body.size()) + " bytes vs httplib's " +
           std::to_string(v.body.size());
  }
  return "";
}

}  // namespace ebb::testing
