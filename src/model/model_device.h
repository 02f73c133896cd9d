// The model's accelerator: where its KV lives, what its device budget is, and its device
// figures (docs/memory.md "On a GPU"). BuildModel calls these in order; ModelControls::Stats reads
// the figures. One code path for every device ORT allocates on (WebGPU, CUDA, ROCm, DirectML):
// the KV is allocated through the session's allocator for the device (kv/kv_device_memory.h).
// Thread-safety: ReadDeviceMemory may be called from any thread (it reads what load set).
#pragma once

#include <memory>

#include "ebb/options.h"
#include "ebb/stats.h"
#include "kv/kv_pool.h"
#include "ort/provider_plan.h"

namespace ebb::internal {

class ModelImpl;

// Before the session is built: resolves m.device from `plan`, and on WebGPU takes the model's
// lease on the device's context options (a conflict with a loaded model: InvalidArgument), and
// sets m.device_cache_mode. Refuses what the device cannot do, naming the reason and the fix:
// kv_cache.mode=dynamic, prefix_cache.max_bytes > 0, decode_batch.max_rows > 1.
void PrepareDevice(ModelImpl& m, const ProviderPlan& plan, const ModelOptions& options);

// After the session is built: the model's KV pool, on the device when there is one (the
// session's allocator for it; when the session has none, e.g. every node fell back to the CPU,
// on the host, with a warning), with its device budget (gpu_mem_limit; weights over it refuse
// the load). Names the adapter in m.device_adapter.
std::unique_ptr<KvPool> MakeKvPool(ModelImpl& m, const ModelOptions& options);

// The model's device figures; `pool` is its KV pool's stats.
DeviceMemory ReadDeviceMemory(const ModelImpl& m, const KvStats& pool);

// "NVIDIA H200 (NVIDIA, discrete, ...)" for `provider`'s adapter as far as ebb can tell
// (WebGPU: the Vulkan device Dawn prefers; CUDA: NVML's device 0); "" when unknown.
std::string DescribeProviderAdapter(const std::string& provider);

}  // namespace ebb::internal
