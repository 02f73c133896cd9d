#include "server/routes.h"

#include <array>

namespace ebb::server {
namespace {

using K = RouteKind;

// Keep in step with docs/http_api.md. Admin routes live under /v1 only; KServe's /openai/v1
// prefix serves the OpenAI routes.
constexpr RouteSpec kRoutes[] = {
    {"GET", "/health", K::kLive},
    {"GET", "/health/liveliness", K::kLive},
    {"GET", "/v2/health/live", K::kLive},
    {"GET", "/ready", K::kReady},
    {"GET", "/health/readiness", K::kReady},
    {"GET", "/v2/health/ready", K::kReady},
    {"GET", "/metrics", K::kOther},
    {"GET", "/", K::kOther},  // the memory page
    // OpenAI (server_openai.cpp), under both prefixes.
    {"POST", "/v1/chat/completions", K::kInference},
    {"POST", "/v1/completions", K::kInference},
    {"POST", "/v1/embeddings", K::kInference},
    {"GET", "/v1/models", K::kOther},
    {"GET", "/v1/models/{id}", K::kOther},
    {"POST", "/openai/v1/chat/completions", K::kInference},
    {"POST", "/openai/v1/completions", K::kInference},
    {"POST", "/openai/v1/embeddings", K::kInference},
    {"GET", "/openai/v1/models", K::kOther},
    {"GET", "/openai/v1/models/{id}", K::kOther},
    // Memory and model administration (server_admin.cpp).
    {"GET", "/v1/runtime", K::kOther},
    {"POST", "/v1/models/{id}/load", K::kOther},
    {"POST", "/v1/models/{id}/unload", K::kOther},
    {"GET", "/v1/models/{id}/runtime", K::kOther},
    {"PATCH", "/v1/models/{id}/runtime", K::kOther},
    {"POST", "/v1/models/{id}/runtime/shrink", K::kOther},
    {"POST", "/v1/models/{id}/runtime/release_weights", K::kOther},
    {"POST", "/v1/models/{id}/prefix", K::kOther},
    {"DELETE", "/v1/models/{id}/prefix", K::kOther},
    {"POST", "/v1/models/{id}/prefix/drop", K::kOther},
    // The Ollama API (server_ollama.cpp), its registry routes refused with a reason.
    {"POST", "/api/generate", K::kInference},
    {"POST", "/api/chat", K::kInference},
    {"POST", "/api/embed", K::kInference},
    {"POST", "/api/embeddings", K::kInference},
    {"GET", "/api/version", K::kOther},
    {"GET", "/api/tags", K::kOther},
    {"GET", "/api/ps", K::kOther},
    {"POST", "/api/show", K::kOther},
    {"POST", "/api/pull", K::kOther},
    {"POST", "/api/push", K::kOther},
    {"POST", "/api/create", K::kOther},
    {"POST", "/api/copy", K::kOther},
    {"DELETE", "/api/delete", K::kOther},
    {"POST", "/api/blobs/{digest}", K::kOther},
};

// Whether `path` matches `label`, segment by segment; a {name} segment matches any non-empty
// segment.
bool Matches(std::string_view label, std::string_view path) {
  while (true) {
    const size_t l = label.find('/', 1);
    const size_t p = path.find('/', 1);
    const std::string_view lseg = label.substr(0, l);
    const std::string_view pseg = path.substr(0, p);
    const bool param = lseg.size() > 3 && lseg[1] == '{' && lseg.back() == '}';
    if (param ? pseg.size() < 2 : lseg != pseg) return false;
    if (l == std::string_view::npos || p == std::string_view::npos) {
      return l == std::string_view::npos && p == std::string_view::npos;
    }
    label.remove_prefix(l);
    path.remove_prefix(p);
  }
}

}  // namespace

std::span<const RouteSpec> Routes() { return kRoutes; }

const RouteSpec* FindRoute(std::string_view method, std::string_view label) {
  for (const RouteSpec& r : kRoutes) {
    if (r.method == method && r.label == label) return &r;
  }
  return nullptr;
}

std::string RoutePattern(std::string_view label) {
  std::string out;
  while (!label.empty()) {
    const size_t open = label.find('{');
    if (open == std::string_view::npos) break;
    const size_t close = label.find('}', open);
    out += label.substr(0, open);
    out += "([^/]+)";
    label.remove_prefix(close + 1);
  }
  out += label;
  return out;
}

Probe ProbeOf(std::string_view path) {
  for (const RouteSpec& r : kRoutes) {
    if (r.label == path) {
      return r.kind == K::kLive ? Probe::kLive : r.kind == K::kReady ? Probe::kReady : Probe::kNone;
    }
  }
  return Probe::kNone;
}

std::string RouteLabel(const std::string& path) {
  if (path.empty() || path[0] != '/') return "other";
  for (const RouteSpec& r : kRoutes) {
    if (Matches(r.label, path)) return std::string(r.label);
  }
  return "other";
}

bool IsInferenceRoute(const std::string& label) {
  for (const RouteSpec& r : kRoutes) {
    if (r.label == label) return r.kind == K::kInference;
  }
  return false;
}

}  // namespace ebb::server
