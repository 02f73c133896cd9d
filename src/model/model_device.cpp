#include "model/model_device.h"

#include <cstdlib>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "kv/kv_cache_device.h"
#include "kv/kv_device_memory.h"
#include "memory/gpu_adapters.h"
#include "memory/nvml.h"
#include "model/model_impl.h"
#include "ort/device_target.h"
#include "ort/webgpu_options.h"

namespace ebb::internal {

void PrepareDevice(ModelImpl& m, const ProviderPlan& plan, const ModelOptions& options) {
  m.device = KvDeviceFor(plan);
  if (!m.device) return;
  const std::string dev = m.device->Name();
  if (m.device->provider == "webgpu") {
    const std::string& ep = m.device->provider;
    const WebGpuOptions w = ParseWebGpuOptions(plan.options.at(ep), plan.named_by.at(ep));
    m.device_cache_mode = w.ort.at("storageBufferCacheMode");
    m.webgpu_context = AcquireWebGpuContext(w, m.id);
  }
  if (m.config.is_encoder) return;  // no KV: nothing below applies
  if (options.kv_mode == KvMode::kDynamic) {
    throw Error(ErrorCode::InvalidArgument, DynamicModeOnDeviceMessage(dev));
  }
  if (options.prefix_cache_max_bytes > 0) {
    throw Error(ErrorCode::InvalidArgument,
                "prefix_cache.max_bytes is not available with the KV on " + dev +
                    ": the prefix cache copies KV positions through host memory, which would undo "
                    "what keeping the KV on the device is for; drop prefix_cache.max_bytes, or run "
                    "on the CPU (execution_provider=cpu)");
  }
  if (options.decode_batch_max_rows > 1) {
    throw Error(
        ErrorCode::InvalidArgument,
        "decode_batch.max_rows=" + std::to_string(options.decode_batch_max_rows) +
            " is not available with the KV on " + dev +
            ": batched decode keeps its rows in one host region; drop decode_batch.max_rows "
            "(concurrent generators still run, each with its own device KV)");
  }
}

std::unique_ptr<KvPool> MakeKvPool(ModelImpl& m, const ModelOptions& options) {
  if (!m.device) {
    return std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes);
  }
  const DeviceTarget& d = *m.device;
  m.device_adapter = DescribeProviderAdapter(d.provider);
  if (d.gpu_mem_limit_bytes > 0 && m.weights_bytes > d.gpu_mem_limit_bytes) {
    throw Error(ErrorCode::ResourceExhausted,
                "model '" + m.id + "': its weights (" + FormatBytes(m.weights_bytes) +
                    ") do not fit " + d.limit_option + "=" + std::to_string(d.gpu_mem_limit_bytes) +
                    " (" + FormatBytes(d.gpu_mem_limit_bytes) + ") on " + d.Name() + "; raise " +
                    d.limit_option + " or drop it");
  }
  if (m.config.is_encoder) {
    return std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes);
  }
  std::unique_ptr<KvDeviceMemory> memory;
  try {
    memory = std::make_unique<OrtKvDeviceMemory>(*m.session, d.memory_name, d.device_id, d.Name());
  } catch (const Error& e) {
    EBB_LOG_WARN("model '{}': the KV stays in host memory: {}", m.id, e.what());
    m.device.reset();
    return std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes);
  }
  auto pool =
      std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes, std::move(memory));
  pool->set_device_budget(d.gpu_mem_limit_bytes, m.weights_bytes, d.limit_option);
  EBB_LOG_INFO("model '{}': KV on {} ({}){}", m.id, d.Name(),
               m.device_adapter.empty() ? "adapter unknown" : m.device_adapter,
               d.gpu_mem_limit_bytes > 0
                   ? "; " + d.limit_option + "=" + FormatBytes(d.gpu_mem_limit_bytes)
                   : std::string());
  return pool;
}

DeviceMemory ReadDeviceMemory(const ModelImpl& m, const KvStats& pool) {
  DeviceMemory d;
  if (!m.device) return d;
  d.available = true;
  d.device = m.device->Name();
  d.adapter = m.device_adapter;
  if (m.kv_pool && m.kv_pool->device() != nullptr) d.kv = pool;
  d.weights_bytes = m.weights_bytes;
  d.used_bytes = d.weights_bytes + d.kv.in_use_bytes + d.kv.retained_bytes;
  d.limit_bytes = m.device->gpu_mem_limit_bytes;
  d.cache_mode = m.device_cache_mode;
  // lazyRelease hands freed buffers back at the end of each run, disabled at once: nothing is
  // cached between requests. simple and bucket keep them where nothing public can count them.
  if (m.device_cache_mode == "lazyRelease" || m.device_cache_mode == "disabled") {
    d.ort_cache_bytes = 0;
  }
  const NvmlMemory nv = ReadNvmlMemory();
  if (nv.available) {
    d.driver_process_bytes = nv.process_bytes;
    d.driver_used_bytes = nv.device_used_bytes;
    d.driver_total_bytes = nv.device_total_bytes;
  }
  return d;
}

std::string DescribeProviderAdapter(const std::string& provider) {
  if (provider == "webgpu") {
    const GpuAdapterList list = ListGpuAdapters();
    for (const GpuAdapter& a : list.adapters) {
      if (!a.chosen) continue;
      // A software device chosen over nothing better is legitimate (CI, a laptop without a
      // driver), but never a surprise: it is some 30x slower than ebb's own CPU path.
      if (a.type == "cpu") {
        EBB_LOG_WARN(
            "WebGPU runs on a software Vulkan device, {}: no GPU's Vulkan driver was found "
            "(VK_DRIVER_FILES={}); for a GPU, install its Vulkan driver and run without "
            "scripts/vulkan_env, or run on the CPU provider (--ep cpu), which is faster than this",
            a.name, std::getenv("VK_DRIVER_FILES") ? std::getenv("VK_DRIVER_FILES") : "unset");
      }
      return DescribeGpuAdapter(a);
    }
    return {};
  }
  if (provider == "cuda" || provider == "tensorrt") {
    const NvmlMemory nv = ReadNvmlMemory();
    if (nv.available) return nv.device_name + " (NVIDIA, driver " + nv.driver_version + ")";
  }
  return {};
}

}  // namespace ebb::internal
