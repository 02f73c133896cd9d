// The service's route names, in one place: the probe paths (ebb's own and the aliases that
// LiteLLM and KServe probe), the prefixes the OpenAI routes are served under, and the route
// label of a path for metrics and logs (docs/http_api.md, docs/metrics.md).
//
// Contract: only the service's own routes become labels (model ids collapse to {id}); anything
// else is "other", so labels stay few and valid UTF-8 whatever paths clients send.
#pragma once

#include <string>
#include <string_view>

namespace ebb::server {

enum class Probe {
  kNone,
  kLive,   // /health, /health/liveliness (LiteLLM), /v2/health/live (KServe)
  kReady,  // /ready, /health/readiness (LiteLLM), /v2/health/ready (KServe)
};

// Which probe `path` (no query string) is, if any.
Probe ProbeOf(std::string_view path);

// The prefixes the OpenAI-compatible routes are registered under: "/v1" and KServe's
// "/openai/v1".
inline constexpr const char* kOpenAiPrefixes[] = {"/v1", "/openai/v1"};

// The label of a path: the service's own route (model ids as {id}) or "other".
std::string RouteLabel(const std::string& path);

// Whether a route label (RouteLabel) is an inference route: a generation or an embedding under
// any OpenAI prefix, or the Ollama API's. Their refusals before a model ran are counted in
// ebb_requests_refused_total (server.cpp's access logger).
bool IsInferenceRoute(const std::string& label);

}  // namespace ebb::server
