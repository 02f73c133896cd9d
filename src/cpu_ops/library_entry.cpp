// src/cpu_ops/library_entry.cpp — libebb_cpu_ops.so's entry point, the one exported symbol: ORT
// calls RegisterCustomOps when a folder names the library (custom_ops_library). Not part of
// libebb's built-in copy of the ops, which libebb registers itself (cpu_ops.h RegisterOps).
#include "cpu_ops.h"

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  using namespace ebb_cpu_ops;
  const OrtApi* api = api_base->GetApi(ORT_API_VERSION);
  if (!api) {
    // An older ORT than these headers. API version 1 always exists and can still say so.
    const std::string why = std::string(kDomain) + ": this ONNX Runtime lacks API version " +
                            std::to_string(ORT_API_VERSION) + " (built against newer headers)";
    return api_base->GetApi(1)->CreateStatus(ORT_FAIL, why.c_str());
  }
  static const bool api_set = [api] {  // the C++ wrappers the ops use read Ort::GetApi()
    Ort::InitApi(api);
    return true;
  }();
  (void)api_set;
  return RegisterOps(options, api);
}
