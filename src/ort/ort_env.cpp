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
  // Never destroyed: kept for the process's life, and the OS takes it back at exit. Destroying
  // it from a static destructor tears down ORT's WebGPU device (CleanupWebGpuContexts) after a
  // GPU driver's own exit handlers have run (the driver is loaded after ebb, so its handlers go
  // first): on an NVIDIA H200 (driver 580.159.04) every WebGPU process then died at exit with
  // SIGSEGV inside the driver, called from libvulkan under ~Env. A pointer in a static stays
  // reachable, so leak checkers do not report it.
  static Ort::Env* env = nullptr;
  EnsureOrtApi();
  std::call_once(once, [] {
    DisableOrtTelemetry();
    env = new Ort::Env(ORT_LOGGING_LEVEL_WARNING, "ebb", ForwardOrtLog, nullptr);
    env->DisableTelemetryEvents();
  });
  return *env;
}

}  // namespace ebb::internal
