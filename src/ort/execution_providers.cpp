#include "ort/execution_providers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace ebb::internal {
namespace {

struct Provider {
  std::string_view canonical;
  std::string_view ort_name;
  std::string_view display;
  std::string_view append_name;  // for SessionOptionsAppendExecutionProvider; "" = own API
  std::array<std::string_view, 3> aliases;  // lower case, besides canonical and ort_name
};

constexpr Provider kProviders[] = {
    {"cpu", "CPUExecutionProvider", "CPU", "", {}},
    {"cuda", "CUDAExecutionProvider", "CUDA", "", {}},
    {"dml", "DmlExecutionProvider", "DirectML", "", {"directml"}},
    {"tensorrt", "TensorrtExecutionProvider", "TensorRT", "", {"trt"}},
    {"rocm", "ROCMExecutionProvider", "ROCm", "", {}},
    {"migraphx", "MIGraphXExecutionProvider", "MIGraphX", "", {}},
    {"openvino", "OpenVINOExecutionProvider", "OpenVINO", "OpenVINO", {}},
    {"qnn", "QNNExecutionProvider", "QNN", "QNN", {}},
    {"coreml", "CoreMLExecutionProvider", "Core ML", "CoreML", {}},
    {"xnnpack", "XnnpackExecutionProvider", "XNNPACK", "XNNPACK", {}},
    {"webgpu", "WebGpuExecutionProvider", "WebGPU", "WebGPU", {}},
    {"nnapi", "NnapiExecutionProvider", "NNAPI", "", {}},
    {"vitisai", "VitisAIExecutionProvider", "Vitis AI", "VitisAI", {}},
    {"azure", "AzureExecutionProvider", "Azure", "AZURE", {}},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const Provider* Find(std::string_view name) {
  const std::string lower = Lower(name);
  for (const Provider& p : kProviders) {
    if (lower == p.canonical || lower == Lower(p.ort_name)) return &p;
    for (std::string_view a : p.aliases) {
      if (!a.empty() && lower == a) return &p;
    }
  }
  return nullptr;
}

}  // namespace

std::string CanonicalProviderName(std::string_view name) {
  const Provider* p = Find(name);
  return p != nullptr ? std::string(p->canonical) : std::string(name);
}

std::string OrtProviderName(std::string_view canonical) {
  const Provider* p = Find(canonical);
  return p != nullptr ? std::string(p->ort_name) : std::string();
}

std::string OrtAppendName(std::string_view canonical) {
  const Provider* p = Find(canonical);
  if (p == nullptr) return std::string(canonical);
  return p->append_name.empty() ? std::string(p->ort_name) : std::string(p->append_name);
}

std::string DescribeProvider(std::string_view canonical) {
  const Provider* p = Find(canonical);
  // Appended, not `"'" + std::string(...)`: GCC 12 at -O2 misreports that form (-Wrestrict).
  if (p == nullptr) {
    std::string quoted = "'";
    quoted.append(canonical);
    quoted.push_back('\'');
    return quoted;
  }
  return std::string(p->display) + " (" + std::string(p->canonical) + ", " +
         std::string(p->ort_name) + ")";
}

std::string MissingProviderMessage(std::string_view canonical, std::string_view where,
                                   std::string_view available, std::string_view load_error) {
  std::string msg =
      std::string(where) + " asks for the execution provider " + DescribeProvider(canonical);
  if (load_error.empty()) {
    msg += ", which this ONNX Runtime does not have (available: " + std::string(available) + ")";
  } else {
    msg += ", which this ONNX Runtime lists (available: " + std::string(available) +
           ") but cannot add: " + std::string(load_error);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  }
  if (canonical == "dml") {
    msg += "; DirectML needs Windows (DirectX 12), so it cannot run here";
  } else if (canonical == "cuda" || canonical == "tensorrt") {
    msg +=
        "; to use it, install an ONNX Runtime GPU build (Microsoft's onnxruntime-linux-x64-gpu "
        "release) with its CUDA libraries and point ebb at it (scripts/bootstrap with "
        "EBB_ORT_ROOT=/path, then configure with -DEBB_ORT_ROOT=/path)";
  } else if (canonical == "webgpu") {
    msg +=
        "; WebGPU runs through Vulkan on Linux and found no usable Vulkan device: install your "
        "GPU's Vulkan driver (NVIDIA: the driver's Vulkan ICD and Debian's libvulkan1; AMD and "
        "Intel: mesa-vulkan-drivers), or on a machine without a GPU Mesa's CPU driver lavapipe "
        "25 or newer (Debian 12: mesa-vulkan-drivers from bookworm-backports; Debian 12's own "
        "Mesa 22.3 is refused by Dawn). In an ebb checkout, scripts/bootstrap fetches lavapipe "
        "into .deps/vulkan and `scripts/vulkan_env COMMAND` runs a command with it; `ebb info "
        "--ep webgpu` lists the Vulkan devices ebb can see";
  }
  return msg +
         "; to run this model on CPU instead, pass --ep cpu (the option execution_provider=cpu), "
         "which ignores the provider list in genai_config.json";
}

}  // namespace ebb::internal
