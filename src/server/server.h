// ebb's HTTP service: the OpenAI-compatible API, the memory endpoints and /metrics over one
// Runtime and its ModelManager (docs/http_api.md, docs/metrics.md).
//
// Routes are thin: they parse the request (openai_request), wait for a slot (admission), take
// the model from the manager (loading or evicting as needed), call ebb::Generate or ebb::Embed,
// and format the answer. Every failure is an OpenAI-shaped error with a fitting status.
//
// Ownership: the Server owns its Runtime, ModelManager, Metrics and the HTTP server.
// Thread-safety: Run() blocks the calling thread; Shutdown() may be called from any other
// thread (e.g. a signal watcher).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/model_manager.h"
#include "ebb/runtime.h"
#include "server/request_guard.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ebb::server {

class Admission;
class HttpFront;
class Metrics;

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 11435;        // 0: any free port (see Server::port())
  RuntimeOptions runtime;  // memory.limit: the budget of all models (weights + KV)
  ModelManagerOptions models;
  int parallel = 2;     // generations/embeddings running at once (1 to kMaxParallel)
  int max_queue = 16;   // requests waiting for a slot; more get 429 (0 to kMaxQueue)
  std::string api_key;  // empty: no authentication
  // Non-empty: a request with 'Authorization: Bearer ADMIN_KEY' may also set the admin-only
  // options (core/admin_options.h); the admin key passes the API key check too.
  std::string admin_key;
  size_t max_body_bytes = 8u << 20;  // larger request bodies get 413
  // On Shutdown (SIGTERM): how long running and queued requests get to finish before the HTTP
  // server stops and cuts them.
  std::chrono::seconds drain_timeout{30};
  // /ready fails (503 "stalled") when requests run or wait and no slot made progress for this
  // long (admission.h); 0: never for a stall.
  std::chrono::seconds ready_stall_timeout{60};
  // The browser defence (request_guard.h): Host names and web origins the admin allows.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  // A request (head and body) must arrive within this; else 408 (http_front.h).
  std::chrono::seconds request_timeout{30};
  size_t max_connections = 512;  // open connections; more get 503 at accept
};

// Bounds of --parallel and --max-queue: each running or queued request holds a thread, so the
// threads stay below kMaxParallel + kMaxQueue + 8 whatever the flags say.
inline constexpr int kMaxParallel = 64;
inline constexpr int kMaxQueue = 256;

class Server {
 public:
  // Creates the runtime and the manager. Throws ebb::Error for bad options.
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port. Throws ebb::Error(Unavailable) naming the address when it is taken.
  void Bind();
  int port() const;
  // Serves until Shutdown(). Call after Bind().
  void Run();
  // Drains: /ready answers 503 at once; every new request but the probes and /metrics (on new
  // and on kept-alive connections) gets 503 "draining" with Retry-After and Connection: close;
  // running and queued requests finish, and every response already begun is written to its
  // last byte (a non-streamed body goes out after its request left the admission slot), for up
  // to drain_timeout; then the HTTP server stops (what still runs is cut) and Run() returns.
  // Idempotent.
  void Shutdown();

  Runtime& runtime();
  ModelManager& manager();

 private:
  // Routes (server_openai.cpp, server_admin.cpp, server_ollama.cpp).
  // Registers `handler` for the route of `method` and `label` in server/routes.cpp's table (its
  // pattern from the label). A route missing from the table throws Internal when the server is
  // built, so every test that starts one catches it.
  void Handle(std::string_view method, const std::string& label,
              std::function<void(const httplib::Request&, httplib::Response&)> handler);
  void RegisterOpenAiRoutes();
  void RegisterAdminRoutes();
  void ChatOrCompletion(const httplib::Request& req, httplib::Response& res, bool chat);
  void Embeddings(const httplib::Request& req, httplib::Response& res);
  // The Ollama API (server_ollama.cpp).
  void RegisterOllamaRoutes();
  void OllamaGenerate(const httplib::Request& req, httplib::Response& res, bool chat);
  void OllamaEmbed(const httplib::Request& req, httplib::Response& res, bool legacy);

  // True when the request carries the admin key (constant-time compare).
  bool IsAdmin(const httplib::Request& req) const;
  // Whether an Authorization value carries the API key or the admin key (true when the
  // service has no API key).
  bool KeyAccepts(const std::string& authorization) const;
  // The admin's prefix_cache.max_bytes for `id` (serve --option, the models file), if any.
  std::optional<uint64_t> AdminPrefixBudgetOf(const std::string& id) const;
  // Acquires the request's model from the manager (model_not_found, 404, when there is none).
  ModelManager::Lease AcquireModel(const std::string& id, std::optional<KeepAlive> keep_alive);
  // Writes `error` as the response.
  static void SendError(httplib::Response& res, const struct ApiError& error);
  // Runs `body`, turning any exception into an OpenAI-shaped error response.
  static void Guard(httplib::Response& res, const std::function<void()>& body);

  ServeOptions options_;
  BrowserPolicy browser_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<ModelManager> manager_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<httplib::Server> http_;  // an HttpFront (http_front.h)
  int port_ = 0;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace ebb::server
