#include <onnxruntime_cxx_api.h>

#include <string>

#include "ebb/error.h"
#include "ebb/version.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"

namespace ebb {
namespace internal {

namespace {

// Runs when libebb is loaded, before any ebb code can create an Ort:: object; turns ORT's
// telemetry off (ort_env.h). A null API (a
// library older than the headers) is reported by EnsureOrtApi() instead of crashing later.
const OrtApi* InitOrtApiAtLoad() {
  DisableOrtTelemetry();  // at load, before any thread of the host could race on the environment
  const OrtApi* api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (api != nullptr) Ort::InitApi(api);
  return api;
}
const OrtApi* const g_ort_api = InitOrtApiAtLoad();

}  // namespace

void EnsureOrtApi() {
  if (g_ort_api == nullptr) {
    throw Error(ErrorCode::Unavailable,
                std::string("the loaded ONNX Runtime (") + OrtGetApiBase()->GetVersionString() +
                    ") does not provide ORT API version " + std::to_string(ORT_API_VERSION) +
                    " that ebb was built with; install ONNX Runtime >= 1.29 (scripts/bootstrap) "
                    "or rebuild ebb against the runtime you have (-DEBB_ORT_ROOT)");
  }
}

}  // namespace internal

std::string Version() { return EBB_VERSION; }

std::string OrtVersion() {
  // From the loaded library, so it reports what actually runs, not the headers' version.
  return OrtGetApiBase()->GetVersionString();
}

std::vector<std::string> AvailableProviders() {
  internal::EnsureOrtApi();
  return Ort::GetAvailableProviders();
}

}  // namespace ebb
