#include "server/routes.h"

#include <cstring>

namespace ebb::server {

Probe ProbeOf(std::string_view path) {
  for (const char* p : {"/health", "/health/liveliness", "/v2/health/live"}) {
    if (path == p) return Probe::kLive;
  }
  for (const char* p : {"/ready", "/health/readiness", "/v2/health/ready"}) {
    if (path == p) return Probe::kReady;
  }
  return Probe::kNone;
}

std::string RouteLabel(const std::string& path) {
  if (ProbeOf(path) != Probe::kNone) return path;
  static const char* kModels = "/v1/models/";
  if (path.rfind(kModels, 0) == 0) {
    const std::string rest = path.substr(std::strlen(kModels));
    const auto slash = rest.find('/');
    const std::string suffix = slash == std::string::npos ? "" : rest.substr(slash);
    for (const char* known : {"", "/load", "/unload", "/runtime", "/runtime/shrink",
                              "/runtime/release_weights", "/prefix", "/prefix/drop"}) {
      if (suffix == known) return std::string(kModels) + "{id}" + suffix;
    }
    return "other";
  }
  // KServe's prefix serves the OpenAI routes only (GET /openai/v1/models/{id} included).
  static const char* kKServeModels = "/openai/v1/models/";
  if (path.rfind(kKServeModels, 0) == 0) {
    const std::string rest = path.substr(std::strlen(kKServeModels));
    return rest.empty() || rest.find('/') != std::string::npos
               ? "other"
               : std::string(kKServeModels) + "{id}";
  }
  for (const char* prefix : kOpenAiPrefixes) {
    for (const char* route : {"/chat/completions", "/completions", "/embeddings", "/models"}) {
      if (path == std::string(prefix) + route) return path;
    }
  }
  // The Ollama API (server_ollama.cpp).
  for (const char* route : {"/api/generate", "/api/chat", "/api/embed", "/api/embeddings",
                            "/api/tags", "/api/ps", "/api/show", "/api/version"}) {
    if (path == route) return path;
  }
  for (const char* known : {"/v1/runtime", "/metrics", "/"}) {
    if (path == known) return path;
  }
  return "other";
}

bool IsInferenceRoute(const std::string& label) {
  for (const char* prefix : kOpenAiPrefixes) {
    for (const char* route : {"/chat/completions", "/completions", "/embeddings"}) {
      if (label == std::string(prefix) + route) return true;
    }
  }
  for (const char* route : {"/api/generate", "/api/chat", "/api/embed", "/api/embeddings"}) {
    if (label == route) return true;
  }
  return false;
}

}  // namespace ebb::server
