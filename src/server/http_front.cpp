#include "server/http_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "server/api_error.h"
#include "server/routes.h"

namespace ebb::server {
namespace {

using Clock = std::chrono::steady_clock;

// A client connection. Owned by exactly one of: the loop (waiting or draining), a worker queue,
// or a worker (being served).
struct Conn {
  int fd = -1;
  std::string buf;         // bytes received and not yet consumed by a served request
  size_t request_len = 0;  // > 0: buf starts with one complete request of this many bytes
  Clock::time_point deadline;
  bool lingering = false;      // answered by the loop; reading and dropping until EOF or deadline
  bool sent_continue = false;  // the loop answered Expect: 100-continue for this request
  bool probe = false;          // GET of a probe path: /health, /ready or an alias (routes.h)
  size_t served = 0;
  size_t accounted = 0;      // bytes of buf's capacity counted in Impl::buffered_
  bool over_budget = false;  // Fill found every connection's buffers together at the budget
  // Chunked-body scan state of the request being read (so a large body is scanned once).
  size_t head_len = 0;
  size_t chunk_pos = 0;
  size_t chunk_total = 0;
  // Framing of the request being read, from its head.
  bool chunked = false;
  size_t content_length = 0;
  bool expect_continue = false;
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// What the loop concluded about the bytes of a connection.
struct Verdict {
  enum Kind { kIncomplete, kComplete, kRefuse } kind = kIncomplete;
  int status = 0;
  std::string code;
  std::string message;
};

Verdict Refuse(int status, std::string code, std::string message) {
  return Verdict{Verdict::kRefuse, status, std::move(code), std::move(message)};
}

const char* Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// A complete response in OpenAI's error shape, closing the connection.
std::string ErrorResponse(int status, const std::string& code, const std::string& message) {
  const std::string body =
      ApiError{status, "invalid_request_error", message, std::nullopt, code, 0}.ToJson();
  return "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// Best effort: the socket buffer takes a small answer at once; a client that does not read
// loses it.
void SendNow(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// httplib's Stream over a connection whose request is already in its buffer: reads come from
// the buffer (never the socket, so the request cannot stall a worker), writes go to the socket
// with the write timeout.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(Conn& c, std::chrono::milliseconds write_timeout)
      : c_(c), write_timeout_(write_timeout), swallow_continue_(c.sent_continue) {}

  bool is_readable() const override { return pos_ < c_.request_len; }
  bool is_writable() const override {
    pollfd p{c_.fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(write_timeout_.count())) <= 0) return false;
    if ((p.revents & (POLLERR | POLLHUP)) != 0) return false;
    // A peer that closed: readable with nothing to read (pipelined bytes keep it alive).
    pollfd r{c_.fd, POLLIN, 0};
    if (::poll(&r, 1, 0) > 0) {
      char b;
      if (::recv(c_.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;
    }
    return true;
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, c_.request_len - pos_);
    std::memcpy(ptr, c_.buf.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  using httplib::Stream::write;
  ssize_t write(const char* ptr, size_t size) override {
    // The loop already told the client to continue (it had to, to read the body first);
    // httplib's own interim answer would be a second one.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (swallow_continue_ && std::string_view(ptr, size) == kContinue) {
      swallow_continue_ = false;
      return static_cast<ssize_t>(size);
    }
    size_t off = 0;
    while (off < size) {
      const ssize_t n = ::send(c_.fd, ptr + off, size - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return -1;
      off += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return c_.fd; }

 private:
  template <class F>
  void Address(F f, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    ip.clear();
    port = 0;
    if (f(c_.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  Conn& c_;
  std::chrono::milliseconds write_timeout_;
  bool swallow_continue_;
  size_t pos_ = 0;
};

// httplib's accept loop enqueues each accepted socket here; running the task inline hands the
// socket to HttpFront::process_and_close_socket at once, which only queues it for the loop.
class InlineQueue final : public httplib::TaskQueue {
 public:
  explicit InlineQueue(std::function<void()> on_shutdown) : on_shutdown_(std::move(on_shutdown)) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { on_shutdown_(); }

 private:
  std::function<void()> on_shutdown_;
};

}  // namespace

class HttpFront::Impl {
 public:
  static FrontLimits WithDefaults(FrontLimits l) {
    if (l.max_buffered_bytes == 0) {
      l.max_buffered_bytes = std::max<size_t>(64u << 20, 4 * l.max_body_bytes);
    }
    return l;
  }

  Impl(HttpFront& front, FrontLimits limits) : front_(front), limits_(WithDefaults(limits)) {}
  ~Impl() { Stop(); }

  void Start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return;
    started_ = true;
    stop_ = false;
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop_ = std::thread([this] { Loop(); });
    for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { Work(main_); });
    for (int i = 0; i < limits_.probe_workers; ++i) {
      workers_.emplace_back([this] { Work(probes_); });
    }
  }

  // Closes every connection (cutting those being served) and joins the threads. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!started_) return;
      started_ = false;
      stop_ = true;
      for (int fd : busy_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    Wake();
    for (auto* q : {&main_, &probes_}) {
      std::lock_guard<std::mutex> lock(q->mu);  // no worker is between its check and its wait
      q->cv.notify_all();
    }
    if (loop_.joinable()) loop_.join();
    for (auto& t : workers_) t.join();
    workers_.clear();
    for (auto* q : {&main_, &probes_}) {
      for (auto& c : q->items) Close(std::move(c));
      q->items.clear();
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : incoming_) Close(std::move(c));
    incoming_.clear();
    in_progress_ = 0;  // what the queues held is closed unanswered
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
  }

  // On the accept thread.
  void Accept(int fd) {
    if (open_.load() >= limits_.max_connections) {
      SendNow(fd, ErrorResponse(503, "too_many_connections",
                                "the service has " + std::to_string(limits_.max_connections) +
                                    " connections open, its limit; retry shortly"));
      Refused(503, "too many connections");
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      return;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->deadline = Clock::now() + limits_.request_timeout;
    ++open_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) {
        Close(std::move(c));
        return;
      }
      incoming_.push_back(std::move(c));
    }
    Wake();
  }

  size_t open() const { return open_.load(); }
  size_t in_progress() const { return in_progress_.load(); }
  std::function<void(int, const std::string&)> refusal_listener;
  std::atomic<bool> close_after_response{false};

 private:
  struct WorkQueue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::unique_ptr<Conn>> items;
  };

  void Wake() {
    if (wake_fd_ < 0) return;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  void Close(std::unique_ptr<Conn> c) {
    if (!c) return;
    buffered_ -= c->accounted;
    ::shutdown(c->fd, SHUT_RDWR);
    ::close(c->fd);
    --open_;
  }

  void Refused(int status, const std::string& why) {
    if (refusal_listener) refusal_listener(status, why);
  }

  // Answers a request by itself and lets the connection drain for a moment: a client still
  // sending its body then reads the answer instead of a reset.
  void Answer(Conn& c, const Verdict& v) {
    SendNow(c.fd, ErrorResponse(v.status, v.code, v.message));
    ::shutdown(c.fd, SHUT_WR);
    Refused(v.status, v.message);
    c.lingering = true;
    c.buf.clear();
    c.buf.shrink_to_fit();
    Account(c);
    c.deadline = Clock::now() + std::chrono::seconds(2);
  }

  // Parses what `c` holds: is there one complete, acceptable request at its front?
  Verdict Examine(Conn& c) {
    if (c.head_len == 0) {
      size_t end = c.buf.find("\r\n\r\n");
      size_t skip = 4;
      if (const size_t lf = c.buf.find("\n\n"); lf != std::string::npos && lf < end) {
        end = lf;
        skip = 2;
      }
      if (end == std::string::npos) {
        if (c.buf.size() > limits_.max_head_bytes) {
          return Refuse(431, "headers_too_large",
                        "the request line and headers are larger than " +
                            std::to_string(limits_.max_head_bytes) + " bytes");
        }
        return {};
      }
      if (end + skip > limits_.max_head_bytes) {
        return Refuse(431, "headers_too_large",
                      "the request line and headers are larger than " +
                          std::to_string(limits_.max_head_bytes) + " bytes");
      }
      Verdict v = ExamineHead(c, std::string_view(c.buf).substr(0, end + skip));
      if (v.kind == Verdict::kRefuse) return v;
      c.head_len = end + skip;
      c.chunk_pos = c.head_len;
      c.chunk_total = 0;
    }
    if (c.chunked) return ScanChunks(c);
    if (c.buf.size() >= c.head_len + c.content_length) {
      c.request_len = c.head_len + c.content_length;
      return Verdict{Verdict::kComplete, 0, "", ""};
    }
    MaybeContinue(c);
    return {};
  }

  // The framing headers: sets c's framing fields and c.probe.
  Verdict ExamineHead(Conn& c, std::string_view head) {
    c.chunked = false;
    c.content_length = 0;
    c.expect_continue = false;
    bool has_length = false;
    int hosts = 0;
    size_t pos = 0;
    bool first = true;
    while (pos < head.size()) {
      size_t nl = head.find('\n', pos);
      if (nl == std::string_view::npos) nl = head.size();
      const std::string_view line = Trim(head.substr(pos, nl - pos));
      pos = nl + 1;
      if (first) {
        first = false;
        // METHOD SP TARGET SP VERSION
        const size_t sp = line.find(' ');
        const size_t sp2 = sp == std::string_view::npos ? sp : line.find(' ', sp + 1);
        if (sp == std::string_view::npos || sp2 == std::string_view::npos) {
          return Refuse(400, "bad_request", "the request line is not 'METHOD PATH HTTP/1.1'");
        }
        std::string_view target = line.substr(sp + 1, sp2 - sp - 1);
        target = target.substr(0, target.find('?'));
        c.probe = line.substr(0, sp) == "GET" && ProbeOf(target) != Probe::kNone;
        continue;
      }
      if (line.empty()) continue;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) {
        return Refuse(400, "bad_request", "a header line has no ':'");
      }
      const std::string name = Lower(Trim(line.substr(0, colon)));
      const std::string_view value = Trim(line.substr(colon + 1));
      if (name == "content-length") {
        if (value.empty() || value.size() > 19 ||
            !std::all_of(value.begin(), value.end(),
                         [](char ch) { return ch >= '0' && ch <= '9'; })) {
          return Refuse(
              400, "invalid_content_length",
              "Content-Length '" + std::string(value.substr(0, 40)) + "' is not a number of bytes");
        }
        const size_t n = std::stoull(std::string(value));
        if (has_length && n != c.content_length) {
          return Refuse(400, "invalid_content_length", "two different Content-Length headers");
        }
        has_length = true;
        c.content_length = n;
      } else if (name == "transfer-encoding") {
        if (Lower(value) != "chunked") {
          return Refuse(400, "unsupported_transfer_encoding",
                        "Transfer-Encoding '" + std::string(value.substr(0, 40)) +
                            "' is not supported: send 'chunked' or a Content-Length");
        }
        c.chunked = true;
      } else if (name == "content-encoding") {
        const std::string enc = Lower(value);
        if (!enc.empty() && enc != "identity") {
          return Refuse(
              415, "unsupported_content_encoding",
              "compressed request bodies (Content-Encoding: " + std::string(value.substr(0, 40)) +
                  ") are not accepted: send the body uncompressed, at most " +
                  std::to_string(limits_.max_body_bytes) + " bytes (--max-body)");
        }
      } else if (name == "expect") {
        c.expect_continue = Lower(value) == "100-continue";
      } else if (name == "host") {
        ++hosts;
      }
    }
    if (hosts > 1) return Refuse(400, "bad_request", "more than one Host header");
    if (c.chunked && has_length) {
      return Refuse(400, "bad_request", "both Content-Length and Transfer-Encoding are set");
    }
    if (c.content_length > limits_.max_body_bytes) return TooLarge();
    return {};
  }

  Verdict TooLarge() const {
    return Refuse(413, "request_too_large",
                  "the request body is larger than the service's limit of " +
                      std::to_string(limits_.max_body_bytes) +
                      " bytes; send less, or restart the service with a larger --max-body");
  }

  void MaybeContinue(Conn& c) {
    if (c.expect_continue && !c.sent_continue) {
      SendNow(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
      c.sent_continue = true;
    }
  }

  // Walks the chunks received so far; the body counts against max_body_bytes as it arrives.
  Verdict ScanChunks(Conn& c) {
    const std::string& b = c.buf;
    while (true) {
      const size_t eol = b.find("\r\n", c.chunk_pos);
      if (eol == std::string::npos) {
        if (b.size() - c.chunk_pos > 1024) {
          return Refuse(400, "bad_chunk", "a chunk-size line is longer than 1024 bytes");
        }
        MaybeContinue(c);
        return {};
      }
      const std::string_view line = std::string_view(b).substr(c.chunk_pos, eol - c.chunk_pos);
      const std::string_view hex = Trim(line.substr(0, line.find(';')));
      if (hex.empty() || hex.size() > 15 || !std::all_of(hex.begin(), hex.end(), [](char ch) {
            return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
          })) {
        return Refuse(400, "bad_chunk", "a chunk size is not a hexadecimal number");
      }
      const size_t size = std::stoull(std::string(hex), nullptr, 16);
      const size_t data = eol + 2;
      if (size == 0) {
        // The last chunk, then optional trailers, then an empty line.
        if (b.compare(data, 2, "\r\n") == 0) {
          c.request_len = data + 2;
          return Verdict{Verdict::kComplete, 0, "", ""};
        }
        const size_t end = b.find("\r\n\r\n", data);
        if (end != std::string::npos) {
          c.request_len = end + 4;
          return Verdict{Verdict::kComplete, 0, "", ""};
        }
        if (b.size() - data > 8192) return Refuse(400, "bad_chunk", "the trailers are too long");
        return {};
      }
      if (c.chunk_total + size > limits_.max_body_bytes) return TooLarge();
      if (b.size() < data + size + 2) {
        MaybeContinue(c);
        return {};
      }
      if (b.compare(data + size, 2, "\r\n") != 0) {
        return Refuse(400, "bad_chunk", "a chunk is not followed by CRLF");
      }
      c.chunk_total += size;
      c.chunk_pos = data + size + 2;
    }
  }

  // A connection with a complete request goes to a worker; else the loop waits for more.
  void Route(std::unique_ptr<Conn> c, std::vector<std::unique_ptr<Conn>>& waiting) {
    Verdict v = Examine(*c);
    // Chunk framing can outweigh its data (1-byte chunks); the buffer stays bounded anyway.
    if (v.kind == Verdict::kIncomplete && c->buf.size() > BufferCap()) v = TooLarge();
    if (v.kind == Verdict::kRefuse) {
      Answer(*c, v);
      waiting.push_back(std::move(c));
      return;
    }
    if (v.kind == Verdict::kIncomplete) {
      waiting.push_back(std::move(c));
      return;
    }
    WorkQueue& q = c->probe ? probes_ : main_;
    ++in_progress_;  // until its worker has answered it (Work)
    {
      std::lock_guard<std::mutex> lock(q.mu);
      q.items.push_back(std::move(c));
    }
    q.cv.notify_one();
  }

  // The most a connection may buffer: one request's head and body and some framing.
  size_t BufferCap() const {
    return limits_.max_head_bytes + 2 * limits_.max_body_bytes + (64u << 10);
  }

  // Counts c's buffer (its capacity: what it holds in memory) in buffered_.
  void Account(Conn& c) {
    const size_t now = c.buf.capacity();
    buffered_ += now;
    buffered_ -= c.accounted;
    c.accounted = now;
  }

  // Reads what the socket has. False: the peer closed or failed.
  bool Fill(Conn& c) {
    char tmp[16384];
    const size_t cap = BufferCap();
    while (true) {
      const ssize_t n = ::recv(c.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
      if (n > 0) {
        if (!c.lingering) {
          if (c.buf.empty() && c.head_len == 0) c.deadline = Clock::now() + limits_.request_timeout;
          // All connections' buffers together stay under the budget: many clients sending
          // bodies at once cannot fill memory before any key is checked.
          if (buffered_.load() + static_cast<size_t>(n) > limits_.max_buffered_bytes) {
            c.over_budget = true;
            return true;
          }
          c.buf.append(tmp, static_cast<size_t>(n));
          Account(c);
          if (c.buf.size() > cap) return true;
        }
        if (static_cast<size_t>(n) < sizeof(tmp)) return true;
        continue;
      }
      if (n == 0) return false;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
  }

  void Loop() {
    std::vector<std::unique_ptr<Conn>> conns;
    std::vector<pollfd> fds;
    while (true) {
      std::vector<std::unique_ptr<Conn>> fresh;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) break;
        for (auto& c : incoming_) fresh.push_back(std::move(c));
        incoming_.clear();
      }
      for (auto& c : fresh) {
        // A connection back from a worker may already hold its next (pipelined) request.
        if (!c->buf.empty() && c->request_len == 0) {
          Route(std::move(c), conns);
        } else {
          conns.push_back(std::move(c));
        }
      }
      const auto now = Clock::now();
      auto next = now + std::chrono::seconds(1);
      fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
      for (auto& c : conns) {
        fds.push_back(pollfd{c->fd, POLLIN, 0});
        next = std::min(next, c->deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now);
      const int rc =
          ::poll(fds.data(), fds.size(),
                 static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wait.count(), 1000))));
      if (rc < 0 && errno != EINTR) break;
      if ((fds[0].revents & POLLIN) != 0) {
        uint64_t v;
        [[maybe_unused]] ssize_t n = ::read(wake_fd_, &v, sizeof(v));
      }
      std::vector<std::unique_ptr<Conn>> keep;
      const auto t = Clock::now();
      for (size_t i = 0; i < conns.size(); ++i) {
        std::unique_ptr<Conn>& c = conns[i];
        const short ev = fds[i + 1].revents;
        if (ev != 0) {
          if (!Fill(*c) || (ev & (POLLERR | POLLNVAL)) != 0) {
            Close(std::move(c));
            continue;
          }
          if (c->over_budget) {
            c->over_budget = false;
            Answer(*c, Refuse(503, "server_busy",
                              "the service is receiving " +
                                  std::to_string(limits_.max_buffered_bytes >> 20) +
                                  " MiB of requests at once, its limit; retry shortly"));
          } else if (!c->lingering) {
            Route(std::move(c), keep);
            continue;
          }
        }
        if (t >= c->deadline) {
          if (c->lingering || (c->buf.empty() && c->head_len == 0)) {
            Close(std::move(c));  // drained, or an idle connection: no answer is owed
            continue;
          }
          Answer(*c, Refuse(408, "request_timeout",
                            "the request did not arrive within " +
                                std::to_string(limits_.request_timeout.count() / 1000) +
                                " s (--request-timeout)"));
        }
        keep.push_back(std::move(c));
      }
      conns = std::move(keep);
    }
    for (auto& c : conns) Close(std::move(c));
  }

  void Work(WorkQueue& q) {
    while (true) {
      std::unique_ptr<Conn> c;
      {
        std::unique_lock<std::mutex> lock(q.mu);
        q.cv.wait(lock, [&] { return Stopping() || !q.items.empty(); });
        if (Stopping()) return;
        c = std::move(q.items.front());
        q.items.pop_front();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_fds_.insert(c->fd);
      }
      bool keep = Serve(*c);
      --in_progress_;  // answered, the last byte of the response written (or failed)
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_fds_.erase(c->fd);
        keep = keep && !stop_;
        if (keep) {
          incoming_.push_back(std::move(c));
        }
      }
      if (keep) {
        Wake();
      } else {
        Close(std::move(c));
      }
    }
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }

  // Runs httplib's processing of the buffered request. True: keep the connection.
  bool Serve(Conn& c) {
    const bool last = c.served + 1 >= limits_.keep_alive_max_count || close_after_response.load();
    bool closed = false;
    bool ok = false;
    {
      ConnStream strm(c, limits_.write_timeout);
      ok = front_.process_request(strm, last, closed, nullptr);
    }
    ++c.served;
    c.buf.erase(0, c.request_len);
    if (c.buf.capacity() > (64u << 10)) c.buf.shrink_to_fit();  // idle connections hold little
    Account(c);
    c.request_len = 0;
    c.head_len = 0;
    c.sent_continue = false;
    c.lingering = false;
    // The next request (already here or not) has its own deadline: idle until its first byte.
    c.deadline = Clock::now() + (c.buf.empty() ? limits_.idle_timeout : limits_.request_timeout);
    return ok && !closed && !last;
  }

  HttpFront& front_;
  const FrontLimits limits_;
  std::atomic<size_t> open_{0};
  std::atomic<size_t> buffered_{0};     // every connection's buffer capacity together
  std::atomic<size_t> in_progress_{0};  // complete requests queued for or held by a worker

  std::mutex mu_;
  bool started_ = false;
  bool stop_ = false;
  int wake_fd_ = -1;
  std::deque<std::unique_ptr<Conn>> incoming_;  // new or returned connections for the loop
  std::unordered_set<int> busy_fds_;
  std::thread loop_;
  std::vector<std::thread> workers_;
  WorkQueue main_;
  WorkQueue probes_;
};

HttpFront::HttpFront(FrontLimits limits) : impl_(std::make_unique<Impl>(*this, limits)) {
  set_payload_max_length(limits.max_body_bytes);
  set_keep_alive_max_count(limits.keep_alive_max_count);
  const auto w = std::chrono::duration_cast<std::chrono::seconds>(limits.write_timeout);
  set_write_timeout(w.count() > 0 ? w.count() : 1);
  new_task_queue = [this] {
    impl_->Start();
    return new InlineQueue([this] { impl_->Stop(); });
  };
}

HttpFront::~HttpFront() {
  if (is_running()) stop();
  impl_->Stop();
}

void HttpFront::set_refusal_listener(std::function<void(int, const std::string&)> fn) {
  impl_->refusal_listener = std::move(fn);
}

void HttpFront::RaiseListenBacklog() {
  const int sock = svr_sock_.load();
  if (sock >= 0) ::listen(sock, SOMAXCONN);  // a second listen() only resizes the backlog
}

size_t HttpFront::open_connections() const { return impl_->open(); }

size_t HttpFront::requests_in_progress() const { return impl_->in_progress(); }

void HttpFront::CloseAfterEachResponse() { impl_->close_after_response = true; }

bool HttpFront::process_and_close_socket(int sock) {
  impl_->Accept(sock);
  return true;
}

}  // namespace ebb::server
