#include "ort/ort_env.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "core/log.h"
#include "ort/ort_api.h"

namespace ebb::internal {
namespace {

void ORT_API_CALL ForwardOrtLog(void* /*param*/, OrtLoggingLevel severity, const char* category,
                                const char* logid, const char* code_location, const char* message) {
  // A failed Run() is also returned to ebb, which reports it (once, with what to change): ORT's
  // own error line would print the same failure a second time, over several lines.
  if (severity == ORT_LOGGING_LEVEL_ERROR &&
      std::string_view(message).starts_with("Non-zero status code returned while running")) {
    severity = ORT_LOGGING_LEVEL_INFO;
  }
  switch (severity) {
    case ORT_LOGGING_LEVEL_VERBOSE:
    case ORT_LOGGING_LEVEL_INFO:
      EBB_LOG_DEBUG("ort [{}:{}] {} ({})", category, logid, message, code_location);
      break;
    case ORT_LOGGING_LEVEL_WARNING:
      EBB_LOG_WARN("ort [{}:{}] {}", category, logid, message);
      break;
    default:
      EBB_LOG_ERROR("ort [{}:{}] {}", category, logid, message);
      break;
  }
}

}  // namespace

void DisableOrtTelemetry() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("ORT_DISABLE_TELEMETRY", "1", 1); });
}

Ort::Env& OrtEnvironment() {
  static std::once_flag once;
  static std::unique_ptr<Ort::Env> env;
  EnsureOrtApi();
  std::call_once(once, [] {
    DisableOrtTelemetry();
    env = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "ebb", ForwardOrtLog, nullptr);
    env->DisableTelemetryEvents();
  });
  return *env;
}

}  // namespace ebb::internal
