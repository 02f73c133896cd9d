// src/cpu_ops/cpu_ops.h — what the ops of libebb_cpu_ops.so share (docs/cpu_ops.md): the ORT
// API pointer RegisterCustomOps sets, error statuses that name the op, and 64-byte aligned
// scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#define ORT_API_MANUAL_INIT
#include "onnxruntime_cxx_api.h"
#undef ORT_API_MANUAL_INIT

namespace ebb_cpu_ops {

inline constexpr const char* kDomain = "ebb.cpu";

// Set once by RegisterCustomOps before any kernel exists; never null inside an op.
extern const OrtApi* g_api;

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
