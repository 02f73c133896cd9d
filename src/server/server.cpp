#include "server/server.h"

#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "memory/heap_trim.h"
#include "platform/net.h"
#include "server/admin_only.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/http_front.h"
#include "server/memory_page.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/routes.h"

namespace ebb::server {
namespace {

// Compares a presented key with the service's in time that depends only on the presented key's
// length: no early exit at the first differing byte, nor at a length mismatch.
bool ConstantTimeEquals(const std::string& presented, const std::string& key) {
  if (key.empty()) return presented.empty();
  volatile unsigned char diff = presented.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    diff = diff | static_cast<unsigned char>(presented[i] ^ key[i % key.size()]);
  }
  return diff == 0;
}

bool HasBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  const std::string len = req.get_header_value("Content-Length");
  return !len.empty() && len != "0";
}

// Set by the pre-routing handler for each request (httplib runs it, the route and the error
// handler on one thread): whether SendError answers in Ollama's shape (an /api/ route).
thread_local bool t_ollama_errors = false;

}  // namespace

Server::Server(ServeOptions options) : options_(std::move(options)) {
  if (options_.parallel < 1) {
    throw Error(ErrorCode::InvalidArgument, "--parallel must be at least 1");
  }
  if (options_.parallel > kMaxParallel) {
    throw Error(ErrorCode::InvalidArgument,
                "--parallel " + std::to_string(options_.parallel) + " is over the bound of " +
                    std::to_string(kMaxParallel) +
                    ": each running request holds a thread, a generator and its KV");
  }
  if (options_.max_queue < 0 || options_.max_queue > kMaxQueue) {
    throw Error(ErrorCode::InvalidArgument,
                "--max-queue " + std::to_string(options_.max_queue) + " is out of range: 0 to " +
                    std::to_string(kMaxQueue) + " (each queued request holds a thread)");
  }
  // Concurrent requests on one model decode together, one Run() per step for up to --parallel
  // of them, where a model's own options do not choose otherwise and its KV is in host memory
  // (issue 40: 4 chats 0.9x -> 1.8-2.3x one chat's rate, one chat within noise; docs/memory.md
  // "Batched decode").
  options_.models.decode_batch_rows = options_.parallel;
  browser_.bound_host = options_.host;
  browser_.allowed_hosts = options_.allowed_hosts;
  browser_.allowed_origins = options_.allowed_origins;
  // The connection threads take turns serving requests; with glibc's per-thread arenas, freed
  // memory would stay split across up to 8 arenas per core (see LimitMallocArenas). One arena:
  // with two, what a generation freed in the second stayed resident after its model's unload
  // (docs/memory.md "A long-running service: malloc arenas").
  const int arenas = internal::LimitMallocArenas(1);
  EBB_LOG_INFO("malloc arenas: {}", arenas > 0 ? std::to_string(arenas) : "glibc default");
  runtime_ = std::make_unique<Runtime>(options_.runtime);
  manager_ = std::make_unique<ModelManager>(*runtime_, options_.models);
  metrics_ = std::make_shared<Metrics>();
  runtime_->AddObserver(metrics_);
  manager_->SetEventListener(
      [m = metrics_](ManagerEvent e, const std::string& id) { m->OnManagerEvent(e, id); });
  if (options_.ready_stall_timeout.count() < 0 || options_.ready_stall_timeout.count() > 86400) {
    throw Error(ErrorCode::InvalidArgument,
                "--ready-stall-timeout " + std::to_string(options_.ready_stall_timeout.count()) +
                    " is out of range: 0 (off) to 86400 seconds");
  }
  admission_ = std::make_unique<Admission>(
      options_.parallel, options_.max_queue,
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.ready_stall_timeout));
  started_ = std::chrono::steady_clock::now();

  // One event loop reads every request (a slow client holds no thread); the request threads are
  // the running and queued requests plus room for the metrics and admin routes (and 429
  // answers) while every slot is busy; /health and /ready have their own (http_front.h).
  FrontLimits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.request_timeout = options_.request_timeout;
  limits.max_connections = options_.max_connections;
  limits.workers = options_.parallel + options_.max_queue + 8;
  auto front = std::make_unique<HttpFront>(limits);
  front->set_refusal_listener([m = metrics_](int status, const std::string& why) {
    m->OnHttpResponse("other", status);
    EBB_LOG_INFO("refused with {}: {}", status, why);
  });
  if (!options_.api_key.empty()) {
    front->set_key_check([this](const std::string& auth) { return KeyAccepts(auth); });
  }
  http_ = std::move(front);
  // Kernel socket options: reuse the address so that a restart binds at once after the old
  // process is gone (a live listener still makes bind fail: SO_REUSEPORT is not set).
  http_->set_socket_options([](int sock) { platform::SetReuseAddress(sock); });

  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    BeginRequest();  // the request line's figures (request_log.h)
    // The Ollama routes answer errors in Ollama's shape, those of the checks below included.
    t_ollama_errors = req.path.rfind("/api/", 0) == 0;
    bool replaced = false;
    const std::string rid = RequestIdFor(req.get_header_value("X-Request-Id"), &replaced);
    if (replaced) {
      EBB_LOG_WARN("X-Request-Id '{}' is not 1 to {} printable ASCII characters: answered as {}",
                   internal::EscapeForMessage(req.get_header_value("X-Request-Id"), 256),
                   kMaxRequestIdBytes, rid);
    }
    res.set_header("X-Request-Id", rid);
    // The front refuses any Content-Encoding but identity (http_framing.h); this check runs
    // before httplib reads (and would inflate) the body, so it holds even if the two disagreed.
    if (const std::string enc = req.get_header_value("Content-Encoding");
        !enc.empty() && enc != "identity") {
      SendError(res, ApiError{415, "invalid_request_error",
                              "compressed request bodies are not accepted; send the body "
                              "uncompressed",
                              std::nullopt, "unsupported_content_encoding", 0});
      return httplib::Server::HandlerResponse::Handled;
    }
    // The browser defence comes first, with or without a key (request_guard.h).
    const RequestFacts facts{req.method, req.get_header_value("Host"),
                             req.get_header_value("Origin"), req.get_header_value("Content-Type"),
                             HasBody(req)};
    if (auto refused = CheckBrowserRules(browser_, facts)) {
      SendError(res, *refused);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (CorsOriginAllowed(browser_, facts.origin)) {
      res.set_header("Access-Control-Allow-Origin", facts.origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {  // the preflight: answered before the key (it has none)
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id");
        res.set_header("Access-Control-Max-Age", "600");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    const bool probe = ProbeOf(req.path) != Probe::kNone;
    // Draining: the probes and /metrics still answer (a balancer and Prometheus watch the drain);
    // everything else, on new and kept-alive connections, is refused before any work, with
    // Retry-After (the connection then closes: HttpFront::CloseAfterEachResponse).
    if (admission_->draining() && !probe && req.path != "/metrics") {
      SendError(res, ApiError{503, "unavailable_error",
                              "the service is shutting down (draining) and accepts no new "
                              "requests; retry after the Retry-After delay, against another "
                              "instance or the restarted service",
                              std::nullopt, "draining", kDrainRetryAfterS});
      return httplib::Server::HandlerResponse::Handled;
    }
    // Exempt from the key: the probes, and the memory page itself (static, no data; its API
    // calls carry the key).
    if (options_.api_key.empty() || probe || (req.path == "/" && req.method == "GET")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string auth = req.get_header_value("Authorization");
    if (KeyAccepts(auth)) return httplib::Server::HandlerResponse::Unhandled;
    SendError(res, ApiError{401, "invalid_request_error",
                            auth.empty() ? "no API key: send the header 'Authorization: Bearer "
                                           "KEY' with the key the service was started with "
                                           "(--api-key)"
                                         : "the API key is not correct; use the key the service "
                                           "was started with (--api-key)",
                            std::nullopt, "invalid_api_key", 0});
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });

  // Statuses httplib answers by itself (404 no route, 413 body too large, 400 bad request line)
  // get the OpenAI shape too.
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404:
        SendError(res, ApiError{404, "not_found_error",
                                "no route " + req.method + " " + req.path +
                                    "; see docs/http_api.md for the endpoints",
                                std::nullopt, "unknown_route", 0});
        break;
      case 413:
        SendError(res, ApiError{413, "invalid_request_error",
                                "the request body is larger than the service's limit of " +
                                    std::to_string(options_.max_body_bytes) +
                                    " bytes; send less, or restart the service with a larger "
                                    "--max-body",
                                std::nullopt, "request_too_large", 0});
        break;
      case 414:
        SendError(res, ApiError{414, "invalid_request_error",
                                "the request line is longer than 8192 bytes; send a shorter URL "
                                "(put large inputs in the request body)",
                                std::nullopt, "uri_too_long", 0});
        break;
      default:
        SendError(res, ApiError{res.status, "invalid_request_error",
                                "the HTTP request was refused (status " +
                                    std::to_string(res.status) + ")",
                                std::nullopt, "http_error", 0});
    }
  });
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        try {
          std::rethrow_exception(ep);
        } catch (...) {
          SendError(res, FromCurrentException());
        }
      });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const std::string route = RouteLabel(req.path);
    metrics_->OnHttpResponse(route, res.status);
    // A stream that failed after its 200 head: counted under the status its error carries too,
    // so that a dashboard of ebb_stream_errors_total sees what the access log's 200 hides.
    if (const int s = StreamErrorStatus(); s != 0) metrics_->OnStreamError(route, s);
    if (res.status >= 400 && !ReachedModel() && IsInferenceRoute(route)) {
      metrics_->OnRefused(route, res.status);
    }
    EBB_LOG_INFO("{}", RequestLine(res.get_header_value("X-Request-Id"), req.method, req.path,
                                   res.status, req.remote_addr));
    t_ollama_errors = false;  // the next request on this thread sets its own
  });

  // Liveness: the process answers. Readiness: it can serve (not draining, not stalled); LiteLLM
  // and KServe probe the same two under their own names (routes.h).
  for (const RouteSpec& r : Routes()) {
    if (r.kind == RouteKind::kLive) {
      Handle(r.method, std::string(r.label), [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"status":"ok"})", "application/json");
      });
    } else if (r.kind == RouteKind::kReady) {
      Handle(r.method, std::string(r.label),
             [this](const httplib::Request&, httplib::Response& res) {
               const Readiness rd = admission_->Check();
               nlohmann::json body = {{"status", rd.status}};
               if (!rd.ready) {
                 res.status = 503;
                 body["reason"] = rd.reason;
               }
               res.set_content(body.dump(), "application/json");
             });
    }
  }
  Handle("GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      res.set_content(metrics_->Render(*runtime_, *manager_, *admission_),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
  });
  RegisterOpenAiRoutes();
  RegisterOllamaRoutes();
  RegisterAdminRoutes();
  Handle("GET", "/", ServeMemoryPage);
}

Server::~Server() {
  if (http_ && http_->is_running()) http_->stop();
  if (runtime_ && metrics_) runtime_->RemoveObserver(metrics_.get());
  manager_.reset();  // stops the keep-alive timer before the runtime goes
}

void Server::Bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) {
      throw Error(ErrorCode::Unavailable,
                  "cannot bind any port on " + options_.host + "; check --host");
    }
    static_cast<HttpFront&>(*http_).RaiseListenBacklog();
    return;
  }
  if (!http_->bind_to_port(options_.host, options_.port)) {
    throw Error(ErrorCode::Unavailable,
                "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    ": the address is in use (another ebb serve, or another program) or not "
                    "available on this machine; stop it, or pick another --port");
  }
  port_ = options_.port;
  static_cast<HttpFront&>(*http_).RaiseListenBacklog();
}

int Server::port() const { return port_; }

void Server::Handle(std::string_view method, const std::string& label,
                    std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  if (FindRoute(method, label) == nullptr) {
    throw Error(ErrorCode::Internal, "route " + std::string(method) + " " + label +
                                         " is not in server/routes.cpp's table; add it there");
  }
  const std::string pattern = RoutePattern(label);
  if (method == "GET") {
    http_->Get(pattern, std::move(handler));
  } else if (method == "POST") {
    http_->Post(pattern, std::move(handler));
  } else if (method == "PATCH") {
    http_->Patch(pattern, std::move(handler));
  } else {
    http_->Delete(pattern, std::move(handler));
  }
}

void Server::Run() {
  EBB_LOG_INFO("ebb serve listening on http://{}:{}", options_.host, port_);
  http_->listen_after_bind();
}

void Server::Shutdown() {
  auto& front = static_cast<HttpFront&>(*http_);
  admission_->Drain();
  front.CloseAfterEachResponse();
  EBB_LOG_INFO("draining: {} running, {} queued; up to {} s (--drain-timeout)",
               admission_->running(), admission_->queued(), options_.drain_timeout.count());
  const auto deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
  // The admission's counts alone are not enough: a non-streamed completion leaves its slot when
  // its handler returns, before httplib writes its body, and stop() would cut that write (the
  // client, or the balancer in front, gets a truncated response it cannot retry). So the drain
  // also waits for every request the front holds to be answered (regression test: ctest
  // serve_drain_pytest, test_sigterm_waits_for_a_response_still_being_written).
  while (
      (admission_->running() > 0 || admission_->queued() > 0 || front.requests_in_progress() > 0) &&
      std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (admission_->running() > 0) {
    EBB_LOG_WARN("drain timeout: {} request(s) still running are cut", admission_->running());
  } else if (const size_t n = front.requests_in_progress(); n > 0) {
    EBB_LOG_WARN("drain timeout: {} response(s) still being written are cut", n);
  }
  http_->stop();
}

namespace {
// Whether `auth` is "Bearer KEY" for a non-empty `key` (constant-time compare).
bool BearerIs(const std::string& auth, const std::string& key) {
  static const std::string kPrefix = "Bearer ";
  return !key.empty() && auth.rfind(kPrefix, 0) == 0 &&
         ConstantTimeEquals(auth.substr(kPrefix.size()), key);
}
}  // namespace

bool Server::KeyAccepts(const std::string& auth) const {
  return options_.api_key.empty() || BearerIs(auth, options_.api_key) ||
         BearerIs(auth, options_.admin_key);
}

std::optional<uint64_t> Server::AdminPrefixBudgetOf(const std::string& id) const {
  const auto it = options_.models.models.find(id);
  return AdminPrefixBudget(options_.models.defaults,
                           it == options_.models.models.end() ? nullptr : &it->second.options);
}

bool Server::IsAdmin(const httplib::Request& req) const {
  return BearerIs(req.get_header_value("Authorization"), options_.admin_key);
}

Runtime& Server::runtime() { return *runtime_; }
ModelManager& Server::manager() { return *manager_; }

void Server::SendError(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  if (!t_ollama_errors) {
    res.set_content(error.ToJson(), "application/json");
    return;
  }
  // Ollama's shape, {"error": "message"}, which its clients show; ebb's code fields beside.
  const nlohmann::json full = nlohmann::json::parse(error.ToJson());
  nlohmann::ordered_json j = {{"error", error.message}};
  for (const char* k : {"code", "param", "ebb_code"}) {
    if (full["error"].contains(k) && !full["error"][k].is_null()) j[k] = full["error"][k];
  }
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void Server::Guard(httplib::Response& res, const std::function<void()>& body) {
  try {
    body();
  } catch (...) {
    const ApiError e = FromCurrentException();
    if (e.status >= 500) EBB_LOG_WARN("request failed with {}: {}", e.status, e.message);
    SendError(res, e);
  }
}

}  // namespace ebb::server
