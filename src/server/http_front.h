// The connection front end of `ebb serve`: an httplib::Server whose connections are read by one
// event loop, not by a thread each, so that slow or hostile clients cannot hold the threads that
// run requests (docs/http_api.md#security-model).
//
// Contract:
// - One poll() loop owns every connection that is waiting for (part of) a request. It reads the
//   whole request, head and body, into the connection's buffer under a deadline for the whole
//   request (not per recv), and frames it with the one parser (http_framing.h) before any thread
//   sees it: what that parser refuses (a bare LF, a second Content-Length, any Content-Encoding
//   but identity, a body over max_body_bytes, ...) is answered at once, a request that does not
//   arrive in time gets 408. These answers come from the loop itself (no thread), with
//   `Connection: close`; the connection then drains what the client still sends for a moment so
//   that it can read them.
// - A complete request goes to a worker thread, which runs httplib's own request processing on
//   the buffered bytes (routes, handlers, pre-routing checks are unchanged). `GET /health` and
//   `GET /ready` (and their aliases, routes.h) go to their own small pool, so they are answered
//   while every request thread is busy.
// - Pipelining: bytes after a request stay in the buffer; the connection goes back to the loop
//   and its next request is served after the previous answer, in order.
// - Connections (docs/http_api.md#connections): one that has sent nothing is closed after
//   idle_timeout. Connections without a keyed request yet are capped at 7/8 of max_connections
//   overall and 1/4 per source address; past a cap, the connection idle longest (0.1 s at least)
//   is closed to make room, else the new one gets a reserve slot whose first request must be a
//   probe or keyed and arrive within 2 s. Past max_connections (plus room for that eviction) a
//   new connection gets 503 and is closed.
// Thread-safety: the httplib::Server API as before (listen on one thread, stop() from another).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "httplib.h"

namespace ebb::server {

struct FrontLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_head_bytes = 64u << 10;  // request line and headers together
  // Every connection's buffered request bytes together; a read past it gets 503. 0: the larger
  // of 64 MiB and 4 x max_body_bytes.
  size_t max_buffered_bytes = 0;
  // The whole request must arrive within this after its first byte (a new connection: after
  // accept); a keep-alive connection may wait idle_timeout for its next request's first byte.
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds write_timeout{30000};
  // httplib's request parsing refuses sockets numbered FD_SETSIZE (1024) or more: stay below.
  size_t max_connections = 512;
  int workers = 4;        // threads that run requests
  int probe_workers = 2;  // threads for GET of the probe paths only (routes.h)
  size_t keep_alive_max_count = 1000;
};

class HttpFront : public httplib::Server {
 public:
  explicit HttpFront(FrontLimits limits);
  ~HttpFront() override;
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Called (on the loop's thread) for each request the front refuses by itself, with its status
  // and the reason; for metrics and the log. Set before listening.
  void set_refusal_listener(std::function<void(int status, const std::string& reason)> fn);
  // Whether a request's Authorization value (percent-decoded, as httplib hands it to the
  // handlers) passes the service's key check; called on the loop's thread, so it must be quick.
  // Unset: every request counts as keyed (a service without --api-key). A connection's first
  // keyed request takes it out of the caps on unauthenticated connections (docs/http_api.md).
  // Set before listening.
  void set_key_check(std::function<bool(const std::string& authorization)> fn);
  // httplib listens with a backlog of 5: a burst of connections (or a few slow clients
  // reconnecting) would see SYNs dropped and retried a second later. Call after binding: raises
  // it to SOMAXCONN.
  void RaiseListenBacklog();
  // Connections open now (waiting, being served or draining).
  size_t open_connections() const;
  // Requests received in full and not yet answered: waiting for a worker or being served,
  // including a response still being written after its handler returned (a non-streamed
  // completion's body goes out after the request has left its admission slot). A drain waits for
  // this to reach 0 before stop(), which would cut them.
  size_t requests_in_progress() const;
  // From now on every response closes its connection (httplib then sends Connection: close),
  // so kept-alive clients reconnect, behind a balancer to another instance. Connections idle
  // in the loop stay open: their next request is answered (503 while draining), not reset.
  void CloseAfterEachResponse();

  class Impl;

 private:
  // httplib's accept loop hands each connection here (on the accept thread): it goes to the
  // event loop instead of being read by a thread.
  bool process_and_close_socket(int sock) override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb::server
