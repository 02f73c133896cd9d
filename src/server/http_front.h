// The connection front end of `ebb serve`: an httplib::Server whose connections are read by one
// event loop, not by a thread each, so that slow or hostile clients cannot hold the threads that
// run requests (docs/http_api.md#security-model).
//
// Contract:
// - One poll() loop owns every connection that is waiting for (part of) a request. It reads the
//   whole request, head and body, into the connection's buffer under a deadline for the whole
//   request (not per recv), and checks the framing before any thread sees it: a head over
//   max_head_bytes gets 431, a Content-Length that is not a decimal number 400, one over
//   max_body_bytes 413 at once (the body is never read), a chunked body 413 as soon as its
//   chunks add up past the limit, any Content-Encoding but identity 415 (nothing is inflated),
//   both Content-Length and Transfer-Encoding 400, a request that does not arrive in time 408.
//   These answers come from the loop itself (no thread), with `Connection: close`; the
//   connection then drains what the client still sends for a moment so that it can read them.
// - A complete request goes to a worker thread, which runs httplib's own request processing on
//   the buffered bytes (routes, handlers, pre-routing checks are unchanged). `GET /health` and
//   `GET /ready` (and their aliases, routes.h) go to their own small pool, so they are answered
//   while every request thread is busy.
// - Pipelining: bytes after a request stay in the buffer; the connection goes back to the loop
//   and its next request is served after the previous answer, in order.
// - More connections than max_connections get 503 at accept and are closed.
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
