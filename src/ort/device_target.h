// DeviceTarget — the accelerator a model's KV cache lives on, resolved from its providers: the
// first accelerator in the ProviderPlan that ebb can allocate on through ORT (WebGPU, CUDA,
// TensorRT, ROCm, DirectML). One code path serves them all: the KV is allocated through the
// session's allocator for `memory_name` and counted against `gpu_mem_limit`.
// Thread-safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ort/provider_plan.h"

namespace ebb::internal {

struct DeviceTarget {
  std::string provider;     // canonical: "webgpu", "cuda", "tensorrt", "rocm", "dml"
  std::string memory_name;  // ORT's OrtMemoryInfo name: "WebGPU_Buf", "Cuda", "Hip", "DML"
  int device_id = 0;        // the memory info's device id
  // The device budget (provider_options.EP.gpu_mem_limit): for CUDA ORT's own arena cap as well;
  // for WebGPU ebb's alone (ORT has none). 0 = none.
  uint64_t gpu_mem_limit_bytes = 0;
  std::string limit_option;  // "provider_options.webgpu.gpu_mem_limit"
  // "webgpu:0": the name of the device in stats, shrink keys and messages.
  std::string Name() const { return provider + ":" + std::to_string(device_id); }
};

// The device of `plan`'s first accelerator; nullopt when the session runs on the CPU only or on
// a provider ebb cannot place KV with (e.g. OpenVINO, which manages its own). Throws
// InvalidArgument for a malformed device id or gpu_mem_limit.
std::optional<DeviceTarget> KvDeviceFor(const ProviderPlan& plan);

}  // namespace ebb::internal
