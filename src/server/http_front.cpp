#include "server/http_front.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "platform/net.h"
#include "server/api_error.h"
#include "server/http_framing.h"
#include "server/request_log.h"
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
  // Admission (docs/http_api.md#connections): a connection is unproven until one of its
  // requests carries a valid key (any request when the service has none). Unproven ones are
  // capped overall and per source; past those caps a new connection gets a reserve slot, where
  // its first request must be a probe or keyed, and arrive within reserve_timeout.
  bool proven = false;
  bool reserve = false;
  bool close_after = false;  // answer this request, then close (a reserve slot's probe)
  bool counted = false;      // counted in Impl's unproven or reserve figures
  bool unadmitted = false;   // accepted, counted in Impl::unadmitted_, not yet seen by Admit
  // Back from a worker with bytes of its next (pipelined) request buffered: it stays counted in
  // Impl::in_progress_ until the loop has routed it, so a drain polling requests_in_progress()
  // never sees 0 between one answer and the next request already here (which is owed its 503).
  bool handed_back = false;
  std::string source;  // the peer's address
  // Since when the connection has waited for a request's first byte (accept, or the end of
  // its last answer): only one idle for kEvictAfter may be evicted.
  Clock::time_point idle_since;
  size_t served = 0;
  size_t accounted = 0;      // bytes of buf's capacity counted in Impl::buffered_
  bool over_budget = false;  // Fill found every connection's buffers together at the budget
  // Framing of the request being read, from its head (head_len 0: the head is not complete),
  // and its chunked body's scan state (so a large body is scanned once).
  size_t head_len = 0;
  bool chunked = false;
  size_t content_length = 0;
  bool expect_continue = false;
  ChunkScan chunks;
};

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

Verdict Refuse(FramingError e) { return Refuse(e.status, std::move(e.code), std::move(e.message)); }

const char* Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
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
         "\r\nX-Request-Id: " + NextRequestId() + "\r\nConnection: close\r\n\r\n" + body;
}

// Best effort: the socket buffer takes a small answer at once; a client that does not read
// loses it.
void SendNow(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const platform::SocketResult r = platform::SendNow(fd, data.data() + off, data.size() - off);
    if (r.bytes <= 0) return;
    off += static_cast<size_t>(r.bytes);
  }
}

// Whether `a` and `b` are equal ignoring ASCII case (header names).
bool EqualsAsciiCaseless(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

// Whether bytes wait in the socket's receive buffer (a request the loop has not read yet).
bool Pending(int fd) { return platform::BytesPending(fd); }

std::string PeerAddress(int fd) {
  std::string ip;
  int port = 0;
  platform::PeerAddress(fd, ip, port);
  return ip;
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
    if (!platform::WaitWritable(c_.fd, static_cast<int>(write_timeout_.count()))) return false;
    // A peer that closed: readable with nothing to read (pipelined bytes keep it alive).
    return !platform::PeerClosed(c_.fd);
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
      const platform::SocketResult r = platform::Send(c_.fd, ptr + off, size - off);
      if (r.error == EINTR) continue;
      if (r.bytes <= 0) return -1;
      off += static_cast<size_t>(r.bytes);
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    platform::PeerAddress(c_.fd, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    platform::LocalAddress(c_.fd, ip, port);
  }
  socket_t socket() const override { return c_.fd; }

 private:
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
    wake_.Open();
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
      for (int fd : busy_fds_) platform::ShutdownSocket(fd, platform::Shutdown::kBoth);
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
    wake_.Close();
  }

  // On the accept thread. Past max_connections plus the eviction headroom the answer is 503 at
  // once; else the loop decides (Admit), where idle connections can be evicted.
  void Accept(int fd) {
    if (open_.load() >= limits_.max_connections + kAdmitHeadroom) {
      SendNow(fd, TooManyConnections());
      Refused(503, "too many connections");
      platform::ShutdownSocket(fd, platform::Shutdown::kBoth);
      platform::CloseSocket(fd);
      return;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->source = PeerAddress(fd);
    c->idle_since = Clock::now();
    // Nothing sent yet: the short idle timeout, not the request's (docs/http_api.md).
    c->deadline = c->idle_since + limits_.idle_timeout;
    c->unadmitted = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) {
        platform::CloseSocket(fd);
        return;
      }
      // unadmitted_ first: Admitted() never counts a connection that it does not also subtract.
      ++unadmitted_;
      ++open_;
      incoming_.push_back(std::move(c));
    }
    Wake();
  }

  size_t open() const { return open_.load(); }
  size_t in_progress() const { return in_progress_.load(); }
  size_t evicted() const { return evicted_.load(); }
  std::function<void(int, const std::string&)> refusal_listener;
  std::function<bool(const std::string&)> key_check;  // null: every request is keyed
  std::atomic<bool> close_after_response{false};

 private:
  struct WorkQueue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::unique_ptr<Conn>> items;
  };

  void Wake() { wake_.Signal(); }

  size_t Reserved() const { return std::max<size_t>(1, limits_.max_connections / 8); }
  size_t UnprovenCap() const { return limits_.max_connections - Reserved(); }
  size_t PerSourceCap() const { return std::max<size_t>(1, limits_.max_connections / 4); }

  std::string TooManyConnections() const {
    return ErrorResponse(503, "too_many_connections",
                         "the service has " + std::to_string(limits_.max_connections) +
                             " connections open, its limit; retry shortly");
  }

  // Open connections that the loop has admitted, `c` included (on the loop). Ones accepted but
  // not yet admitted are left out: each makes its own room when its turn comes, so a burst of
  // reconnections queued behind a keyed client cannot push it out (the 512-idle-sockets case).
  size_t Admitted() const {
    const size_t open = open_.load();
    const size_t waiting = unadmitted_.load();
    return open > waiting ? open - waiting : 0;
  }

  // Takes a new connection's slot (on the loop): an unproven one under the caps, else after
  // evicting an idle connection, else a reserve slot. False: no room at all (answer 503).
  bool Admit(Conn& c, std::vector<std::unique_ptr<Conn>>& conns) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool over_total = false;
      bool over_source = false;
      {
        std::lock_guard<std::mutex> lock(count_mu_);
        over_total = Admitted() > limits_.max_connections;
        const bool over_unproven = unproven_ >= UnprovenCap();
        const auto it = per_source_.find(c.source);
        over_source = it != per_source_.end() && it->second >= PerSourceCap();
        if (!over_total && !over_unproven && !over_source) {
          ++unproven_;
          ++per_source_[c.source];
          c.counted = true;
          return true;
        }
      }
      // A connection that has sent nothing yet owes nothing: the oldest one makes room (one of
      // this source's when the source is over its cap).
      if (attempt == 0 && EvictIdle(conns, over_source ? c.source : std::string(), over_total)) {
        continue;
      }
      break;
    }
    // No idle connection to close: a reserve slot, past max_connections too, up to the headroom.
    // A reserve slot is evictable after kEvictAfter and lasts kReserveTimeout, so the headroom
    // lets a keyed client in while a flood of fresh unauthenticated sockets (all younger than
    // kEvictAfter) holds the limit, and an attacker cannot keep it.
    if (Admitted() > limits_.max_connections + kAdmitHeadroom) return false;
    std::lock_guard<std::mutex> lock(count_mu_);
    ++reserve_;
    c.reserve = true;
    c.counted = true;
    c.deadline = Clock::now() + std::min(kReserveTimeout, limits_.request_timeout);
    return true;
  }

  // Closes the connection waiting in the loop that has been idle longest (sent nothing for at
  // least kEvictAfter and nothing waiting unread, so that a client between its connect and its
  // request is not cut): an
  // unproven one (from `source` if given), else, when `any_idle`, an idle kept-alive one.
  bool EvictIdle(std::vector<std::unique_ptr<Conn>>& conns, const std::string& source,
                 bool any_idle) {
    const auto cutoff = Clock::now() - kEvictAfter;
    std::unique_ptr<Conn>* oldest = nullptr;
    for (int pass = 0; pass < 2 && oldest == nullptr; ++pass) {
      if (pass == 1 && !any_idle) break;
      for (auto& c : conns) {
        if (!c || c->lingering || !c->buf.empty() || c->head_len != 0) continue;
        if (c->idle_since > cutoff || Pending(c->fd)) continue;
        if (pass == 0 && (c->proven || (!source.empty() && c->source != source))) continue;
        if (oldest == nullptr || c->idle_since < (*oldest)->idle_since) oldest = &c;
      }
    }
    if (oldest == nullptr) return false;
    Close(std::move(*oldest));  // leaves a null entry; the loop drops it
    ++evicted_;
    return true;
  }

  // A request of `c` carried a valid key (or the service has none): it leaves the caps.
  void Prove(Conn& c) {
    Uncount(c);
    c.proven = true;
    if (c.reserve) {
      c.reserve = false;
      c.deadline = Clock::now() + limits_.request_timeout;
    }
  }

  void Uncount(Conn& c) {
    if (!c.counted) return;
    std::lock_guard<std::mutex> lock(count_mu_);
    c.counted = false;
    if (c.reserve) {
      --reserve_;
      return;
    }
    --unproven_;
    auto it = per_source_.find(c.source);
    if (it != per_source_.end() && --it->second == 0) per_source_.erase(it);
  }

  bool KeyValid(const RequestHead& h) const {
    if (!key_check) return true;
    for (const auto& [name, value] : h.headers) {
      if (name.size() == 13 && EqualsAsciiCaseless(name, "authorization")) {
        // httplib decodes header values (%XX) before the handlers see them: so does this.
        return key_check(httplib::detail::decode_url(value, false));
      }
    }
    return key_check("");
  }

  void Close(std::unique_ptr<Conn> c) {
    if (!c) return;
    Uncount(*c);
    if (c->unadmitted) --unadmitted_;
    buffered_ -= c->accounted;
    platform::ShutdownSocket(c->fd, platform::Shutdown::kBoth);
    platform::CloseSocket(c->fd);
    --open_;
  }

  void Refused(int status, const std::string& why) {
    if (refusal_listener) refusal_listener(status, why);
  }

  // Answers a request by itself and lets the connection drain for a moment: a client still
  // sending its body then reads the answer instead of a reset.
  void Answer(Conn& c, const Verdict& v) {
    SendNow(c.fd, ErrorResponse(v.status, v.code, v.message));
    platform::ShutdownSocket(c.fd, platform::Shutdown::kWrite);
    Refused(v.status, v.message);
    c.lingering = true;
    c.buf.clear();
    c.buf.shrink_to_fit();
    Account(c);
    c.deadline = Clock::now() + std::chrono::seconds(2);
  }

  // Parses what `c` holds (http_framing.h): is there one complete, acceptable request at its
  // front?
  Verdict Examine(Conn& c) {
    const FramingLimits limits{limits_.max_head_bytes, limits_.max_body_bytes};
    if (c.head_len == 0) {
      HeadResult h = ParseRequestHead(c.buf, limits);
      if (h.kind == Framing::kRefuse) return Refuse(std::move(h.error));
      if (h.kind == Framing::kIncomplete) return {};
      c.head_len = h.head.head_len;
      c.chunked = h.head.chunked;
      c.content_length = h.head.content_length;
      c.expect_continue = h.head.expect_continue;
      c.chunks = ChunkScan{c.head_len, 0};
      std::string_view target = h.head.target;
      target = target.substr(0, target.find('?'));
      c.probe = h.head.method == "GET" && ProbeOf(target) != Probe::kNone;
      if (!c.proven) {
        if (KeyValid(h.head)) {
          Prove(c);
        } else if (c.reserve && c.probe) {
          c.close_after = true;  // a probe is answered in a reserve slot, which it then frees
        } else if (c.reserve) {
          return Refuse(503, "too_many_connections",
                        "the service holds its limit of connections without a valid API key (" +
                            std::to_string(UnprovenCap()) + ", " + std::to_string(PerSourceCap()) +
                            " per address); send the key (Authorization: Bearer KEY) or retry "
                            "shortly");
        }
      }
    }
    if (c.chunked) {
      BodyResult b = ScanChunkedBody(c.buf, c.chunks, limits_.max_body_bytes);
      if (b.kind == Framing::kRefuse) return Refuse(std::move(b.error));
      if (b.kind == Framing::kComplete) {
        c.request_len = b.request_len;
        return Verdict{Verdict::kComplete, 0, "", ""};
      }
      MaybeContinue(c);
      return {};
    }
    if (c.buf.size() >= c.head_len + c.content_length) {
      c.request_len = c.head_len + c.content_length;
      return Verdict{Verdict::kComplete, 0, "", ""};
    }
    MaybeContinue(c);
    return {};
  }

  Verdict TooLarge() const { return Refuse(BodyTooLarge(limits_.max_body_bytes)); }

  void MaybeContinue(Conn& c) {
    if (c.expect_continue && !c.sent_continue) {
      SendNow(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
      c.sent_continue = true;
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
      const platform::SocketResult r = platform::ReceiveNow(c.fd, tmp, sizeof(tmp));
      const int64_t n = r.bytes;
      if (n > 0) {
        if (!c.lingering) {
          if (c.buf.empty() && c.head_len == 0 && !c.reserve) {
            c.deadline = Clock::now() + limits_.request_timeout;
          }
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
      if (r.error == 0) return false;
      return r.error == EAGAIN || r.error == EWOULDBLOCK || r.error == EINTR;
    }
  }

  void Loop() {
    std::vector<std::unique_ptr<Conn>> conns;
    platform::PollSet fds;
    while (true) {
      std::vector<std::unique_ptr<Conn>> fresh;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) break;
        for (auto& c : incoming_) fresh.push_back(std::move(c));
        incoming_.clear();
      }
      for (auto& c : fresh) {
        if (c->unadmitted) {
          c->unadmitted = false;
          --unadmitted_;
        }
        if (!c->proven && !c->counted && c->served == 0 && !Admit(*c, conns)) {
          SendNow(c->fd, TooManyConnections());
          Refused(503, "too many connections");
          Close(std::move(c));
          continue;
        }
        // A connection back from a worker may already hold its next (pipelined) request.
        const bool handed_back = c->handed_back;
        c->handed_back = false;
        if (!c->buf.empty() && c->request_len == 0) {
          Route(std::move(c), conns);
        } else {
          conns.push_back(std::move(c));
        }
        if (handed_back) --in_progress_;  // Route counted it again if the request is complete
      }
      conns.erase(std::remove(conns.begin(), conns.end(), nullptr), conns.end());  // evicted
      const auto now = Clock::now();
      auto next = now + std::chrono::seconds(1);
      fds.Clear();
      fds.AddWake(wake_);
      for (auto& c : conns) {
        fds.AddReadable(c->fd);
        next = std::min(next, c->deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now);
      const int rc =
          fds.Wait(static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(wait.count(), 1000))));
      if (rc < 0) break;
      if (fds.Readable(0)) wake_.Drain();
      std::vector<std::unique_ptr<Conn>> keep;
      const auto t = Clock::now();
      for (size_t i = 0; i < conns.size(); ++i) {
        std::unique_ptr<Conn>& c = conns[i];
        if (fds.Ready(i + 1)) {
          if (!Fill(*c) || fds.Failed(i + 1)) {
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
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_fds_.erase(c->fd);
        keep = keep && !stop_;
        // Answered, the last byte of the response written (or failed); a connection with its
        // next request's bytes here stays counted until the loop routes it (Conn::handed_back).
        c->handed_back = keep && !c->buf.empty();
        if (!c->handed_back) --in_progress_;
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
    const bool last = c.served + 1 >= limits_.keep_alive_max_count || close_after_response.load() ||
                      c.close_after;
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
    c.idle_since = Clock::now();
    c.deadline = c.idle_since + (c.buf.empty() ? limits_.idle_timeout : limits_.request_timeout);
    return ok && !closed && !last;
  }

  HttpFront& front_;
  const FrontLimits limits_;
  // Headroom over max_connections that new connections may take until the loop has evicted
  // idle ones for them (Admit); past it the accept thread answers 503.
  static constexpr size_t kAdmitHeadroom = 64;
  // A reserve slot's first request must arrive within this.
  static constexpr std::chrono::milliseconds kReserveTimeout{2000};
  // How long a connection must have sent nothing before it may be evicted for a new one.
  static constexpr std::chrono::milliseconds kEvictAfter{100};
  std::atomic<size_t> open_{0};
  std::atomic<size_t> unadmitted_{0};  // of open_: accepted, not yet through Admit
  std::atomic<size_t> evicted_{0};
  std::mutex count_mu_;  // the admission figures below
  size_t unproven_ = 0;  // unproven connections, reserve slots apart
  size_t reserve_ = 0;
  std::unordered_map<std::string, size_t> per_source_;  // unproven connections per address
  std::atomic<size_t> buffered_{0};     // every connection's buffer capacity together
  std::atomic<size_t> in_progress_{0};  // complete requests queued for or held by a worker

  std::mutex mu_;
  bool started_ = false;
  bool stop_ = false;
  platform::WakeEvent wake_;  // wakes the loop: a connection arrived or came back, or Stop
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

void HttpFront::set_key_check(std::function<bool(const std::string&)> fn) {
  impl_->key_check = std::move(fn);
}

void HttpFront::RaiseListenBacklog() {
  platform::RaiseListenBacklog(svr_sock_.load());  // a second listen() only resizes the backlog
}

size_t HttpFront::open_connections() const { return impl_->open(); }

size_t HttpFront::requests_in_progress() const { return impl_->in_progress(); }

void HttpFront::CloseAfterEachResponse() { impl_->close_after_response = true; }

bool HttpFront::process_and_close_socket(int sock) {
  impl_->Accept(sock);
  return true;
}

}  // namespace ebb::server
