// src/cpu_ops/cpu_ops.cpp — registers the domain ebb.cpu with MatMulNBits (int4_rows_op.h) and
// GroupQueryAttention (gqa_op.h), ebb's own CPU kernels for com.microsoft's ops of the same names,
// taking the same inputs and attributes (docs/cpu_ops.md).
//
// The op and domain objects live to process exit (ORT keeps pointers to them in every session
// that uses them); libebb_cpu_ops.so is linked -z nodelete, so ORT's dlclose after the last
// session does not unmap them.
#include "cpu_ops.h"

#include "gqa_op.h"
#include "int4_rows_op.h"

namespace ebb_cpu_ops {

const OrtApi* g_api = nullptr;

OrtStatus* RegisterOps(OrtSessionOptions* options, const OrtApi* api) {
  static const bool api_set = [api] {  // once, before any kernel can read g_api
    g_api = api;
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

}  // namespace ebb_cpu_ops
