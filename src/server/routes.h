// The service's routes, in one table: every route the server registers (Server::Handle refuses
// one that is not here) with its method, its label and its kind. The table gives httplib its
// patterns, metrics and logs their route labels, the probes their paths and the refusal counter
// its inference routes, so a route is named once (docs/http_api.md, docs/metrics.md).
//
// Contract: only the service's own routes become labels (a path parameter collapses to its
// {name}); anything else is "other", so labels stay few and valid UTF-8 whatever paths clients
// send.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ebb::server {

enum class Probe {
  kNone,
  kLive,   // /health, /health/liveliness (LiteLLM), /v2/health/live (KServe)
  kReady,  // /ready, /health/readiness (LiteLLM), /v2/health/ready (KServe)
};

enum class RouteKind {
  kLive,       // a liveness probe
  kReady,      // a readiness probe
  kInference,  // a generation or an embedding: its refusals before a model ran are counted
  kOther,      // listing, admin, metrics, the memory page, Ollama's registry refusals
};

struct RouteSpec {
  std::string_view method;  // "GET", "POST", "PATCH" or "DELETE"
  std::string_view label;   // the path; a path parameter is written {name} ("/v1/models/{id}")
  RouteKind kind;
};

// Every route of the service.
std::span<const RouteSpec> Routes();
// The route of `method` and `label`; nullptr when the table has none.
const RouteSpec* FindRoute(std::string_view method, std::string_view label);
// httplib's pattern of a label: each {name} becomes "([^/]+)".
std::string RoutePattern(std::string_view label);

// The prefixes the OpenAI-compatible routes are registered under: "/v1" and KServe's
// "/openai/v1".
inline constexpr const char* kOpenAiPrefixes[] = {"/v1", "/openai/v1"};

// Which probe `path` (no query string) is, if any.
Probe ProbeOf(std::string_view path);
// The label of a path: the label of the table's route it matches (any method), or "other".
std::string RouteLabel(const std::string& path);
// Whether a route label (RouteLabel) is an inference route (RouteKind::kInference).
bool IsInferenceRoute(const std::string& label);

}  // namespace ebb::server
