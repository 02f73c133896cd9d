// src/cpu_ops/cpu_ops.cpp — libebb_cpu_ops.so's entry point: registers the domain ebb.cpu with
// MatMulNBits (int4_rows_op.h) and GroupQueryAttention (gqa_op.h), ebb's own CPU kernels for
// com.microsoft's ops of the same names, taking the same inputs and attributes (docs/cpu_ops.md;
// a folder is rewritten for them by tools/cpu_ops_model.py).
//
// The op and domain objects live to process exit (ORT keeps pointers to them in every session
// that uses them); the library is linked -z nodelete, so ORT's dlclose after the last session
// does not unmap them.
#include "cpu_ops.h"

#include "gqa_op.h"
#include "int4_rows_op.h"

namespace ebb_cpu_ops {
const OrtApi* g_api = nullptr;
}  // namespace ebb_cpu_ops

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
  static const bool api_set = [api] {  // once, before any kernel can read g_api
    g_api = api;
    Ort::InitApi(api);
    return true;
  }();
  (void)api_set;
  static OrtCustomOpDomain* domain = [api] {
    OrtCustomOpDomain* d = nullptr;
    if (OrtStatus* st = api->CreateCustomOpDomain(kDomain, &d)) {
      api->ReleaseStatus(st);
      return static_cast<OrtCustomOpDomain*>(nullptr);
    }
    for (const OrtCustomOp* op : {Int4RowsOp(), GqaOp()}) {
      if (OrtStatus* st = api->CustomOpDomain_Add(d, const_cast<OrtCustomOp*>(op))) {
        api->ReleaseStatus(st);
        return static_cast<OrtCustomOpDomain*>(nullptr);
      }
    }
    return d;
  }();
  if (!domain) return api->CreateStatus(ORT_FAIL, "ebb.cpu: could not create the op domain");
  return api->AddCustomOpDomain(options, domain);
}
