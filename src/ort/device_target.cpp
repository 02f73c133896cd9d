#include "ort/device_target.h"

#include "core/option_parse.h"
#include "ebb/options.h"
#include "ort/webgpu_options.h"

namespace ebb::internal {

std::optional<DeviceTarget> KvDeviceFor(const ProviderPlan& plan) {
  const std::string ep = plan.FirstAccelerator();
  if (ep.empty()) return std::nullopt;
  const auto& opts = plan.options.at(ep);
  DeviceTarget t;
  t.provider = ep;
  t.limit_option = "provider_options." + ep + ".gpu_mem_limit";
  if (ep == "webgpu") {
    const WebGpuOptions w = ParseWebGpuOptions(opts, plan.named_by.at(ep));
    // ORT's WebGPU allocator is device 0 whatever the context id (WebGpuDevice in ORT).
    t.memory_name = "WebGPU_Buf";
    t.device_id = 0;
    t.gpu_mem_limit_bytes = w.gpu_mem_limit_bytes;
    return t;
  }
  if (ep == "cuda" || ep == "tensorrt") {
    t.memory_name = "Cuda";
  } else if (ep == "rocm") {
    t.memory_name = "Hip";
  } else if (ep == "dml") {
    t.memory_name = "DML";
  } else {
    return std::nullopt;
  }
  if (auto it = opts.find("device_id"); it != opts.end()) {
    t.device_id =
        static_cast<int>(ParseInt("provider_options." + ep + ".device_id", it->second, 0, 1024));
  }
  if (auto it = opts.find("gpu_mem_limit"); it != opts.end()) {
    t.gpu_mem_limit_bytes = ParseByteSize(it->second, t.limit_option);
  }
  return t;
}

}  // namespace ebb::internal
