// src/cpu_ops/cpu_ops.h — what the ebb.cpu ops share, in libebb_cpu_ops.so and in libebb's
// built-in copy (docs/cpu_ops.md): the registration, the ORT API pointer it sets, error statuses
// that name the op, and 64-byte aligned scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

// The ORT C++ API without its automatic initialisation: libebb_cpu_ops.so gets ORT's API from
// RegisterCustomOps (library_entry.cpp calls Ort::InitApi); built into libebb, the sources are
// compiled with ORT_API_MANUAL_INIT already defined and libebb initialises the API itself.
#ifndef ORT_API_MANUAL_INIT
#define ORT_API_MANUAL_INIT
#include "onnxruntime_cxx_api.h"
#undef ORT_API_MANUAL_INIT
#else
#include "onnxruntime_cxx_api.h"
#endif

namespace ebb_cpu_ops {

inline constexpr const char* kDomain = "ebb.cpu";

// Set once by RegisterOps before any kernel exists; never null inside an op.
extern const OrtApi* g_api;

// Adds the domain ebb.cpu, with MatMulNBits (int4_rows_op.h) and GroupQueryAttention (gqa_op.h),
// to `options`. The first call's `api` is the one every kernel uses. Two entry points call it:
// the exported RegisterCustomOps of libebb_cpu_ops.so (library_entry.cpp), for a folder that
// names the library, and libebb itself (model/cpu_ops_rewrite.h, option cpu_ops), which links
// these sources in. Thread-safe. Returns null or an ORT_FAIL status.
OrtStatus* RegisterOps(OrtSessionOptions* options, const OrtApi* api);

// An ORT_FAIL status "ebb.cpu.<op>: <what>".
inline OrtStatus* OpError(const char* op, const std::string& what) {
  return g_api->CreateStatus(ORT_FAIL, (std::string(kDomain) + "." + op + ": " + what).c_str());
}

// 64-byte aligned storage that only grows (Reset to a larger size drops the contents) and is
// never copied.
struct Aligned {
  std::unique_ptr<uint8_t[]> storage;
  uint8_t* data = nullptr;
  size_t bytes = 0;
  void Reset(size_t n) {
    if (n <= bytes) return;
    storage.reset(new uint8_t[n + 64]);
    data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(storage.get()) + 63) &
                                      ~uintptr_t{63});
    bytes = n;
  }
};

}  // namespace ebb_cpu_ops
