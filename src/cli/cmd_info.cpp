// `ebb info MODEL_DIR [--json]`: runtime information and a summary of a model folder.
#include <iostream>

#include "cli/commands.h"
#include "ebb/version.h"
#include "memory/gpu_adapters.h"
#include "model/model_info.h"
#include "ort/execution_providers.h"

namespace ebb::cli {
namespace {

std::string Shape(const std::vector<std::string>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + "]";
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// GpuAdaptersJson: `ebb info --ep webgpu --json`'s "gpu_adapters".
nlohmann::json GpuAdaptersJson(const internal::GpuAdapterList& list);

}  // namespace

void PrintGpuAdapters(const internal::GpuAdapterList& list) {
  if (list.adapters.empty()) {
    std::cout << "vulkan:   no device (" << list.error << ")\n";
    return;
  }
  std::cout << "vulkan:   " << list.adapters.size() << " device"
            << (list.adapters.size() == 1 ? "" : "s")
            << (list.loader_path_hint.empty() ? "" : " (loader " + list.loader_path_hint + ")")
            << "; WebGPU uses the one marked *\n";
  for (const auto& a : list.adapters) {
    std::cout << "  " << (a.chosen ? "* " : "  ") << internal::DescribeGpuAdapter(a);
    std::cout << "; heaps:";
    for (size_t i = 0; i < a.heap_bytes.size(); ++i) {
      std::cout << " " << Mib(a.heap_bytes[i])
                << (a.heap_device_local[i] ? " device-local" : " host");
    }
    std::cout << "; max storage buffer " << Mib(a.max_storage_buffer_range) << "\n";
  }
}

namespace {
nlohmann::json GpuAdaptersJson(const internal::GpuAdapterList& list) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& a : list.adapters) {
    arr.push_back({{"name", a.name},
                   {"type", a.type},
                   {"vendor", a.vendor},
                   {"vendor_id", a.vendor_id},
                   {"device_id", a.device_id},
                   {"driver_version", a.driver_version},
                   {"api_version", a.api_version},
                   {"device_local_bytes", a.device_local_bytes},
                   {"heap_bytes", a.heap_bytes},
                   {"max_storage_buffer_range", a.max_storage_buffer_range},
                   {"chosen", a.chosen}});
  }
  return {{"adapters", arr},
          {"error", list.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(list.error)}};
}
}  // namespace

void RegisterInfoCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the runtime and a model folder's summary");
  auto dir = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto ep = std::make_shared<std::string>();
  cmd->add_option("MODEL_DIR", *dir, "onnxruntime-genai model folder")
      ->required()
      ->check(ModelDir());
  cmd->add_flag("--json", *as_json, "Print one JSON object");
  cmd->add_option("--ep", *ep,
                  "Open the model on this execution provider (execution_provider): its device, "
                  "adapter and which nodes fall back to the CPU; webgpu also lists the Vulkan "
                  "devices ebb can see");
  cmd->callback([dir, as_json, ep] {
    // The adapters first: when WebGPU finds no usable device, the list says what is there.
    const bool webgpu = internal::CanonicalProviderName(*ep) == "webgpu";
    const internal::GpuAdapterList adapters =
        webgpu ? internal::ListGpuAdapters() : internal::GpuAdapterList{};
    if (webgpu && !*as_json) PrintGpuAdapters(adapters);
    const auto summary = internal::DescribeModel(*dir, *ep);
    if (*as_json) {
      nlohmann::json j;
      j["ebb_version"] = Version();
      j["onnxruntime_version"] = OrtVersion();
      j["execution_providers"] = AvailableProviders();
      j["cpu_kernels"] = CpuKernels();
      j["model"] = internal::ModelFolderInfoJson(summary);
      if (webgpu) j["gpu_adapters"] = GpuAdaptersJson(adapters);
      std::cout << j.dump(2) << "\n";
      return;
    }
    const auto& c = summary.config;
    std::cout << "ebb " << Version() << " on onnxruntime " << OrtVersion() << " (";
    const auto eps = AvailableProviders();
    for (size_t i = 0; i < eps.size(); ++i) std::cout << (i ? ", " : "") << eps[i];
    std::cout << ")\n";
    std::cout << "kernels:  " << summary.kernels << "\n";
    if (!summary.device.empty()) {
      std::cout << "device:   " << summary.device << " ("
                << (summary.adapter.empty() ? "adapter unknown" : summary.adapter) << ")\n";
    }
    std::cout << "model:    " << c.dir.string() << "\n";
    std::cout << "type:     " << c.model_type << (c.is_encoder ? " (encoder)" : " (decoder)")
              << "\n";
    std::cout << "file:     " << c.model_path.filename().string() << " ("
              << Mib(summary.model_file_bytes) << ")\n";
    if (!summary.custom_ops_library.empty()) {
      std::cout << "custom ops: " << summary.custom_ops_library
                << " (session_options.custom_ops_library)\n";
    }
    std::cout << "vocab:    " << c.vocab_size << ", context_length " << c.context_length << "\n";
    if (!c.is_encoder) {
      std::cout << "layers:   " << c.num_hidden_layers << ", heads " << c.num_attention_heads
                << " (kv " << c.num_key_value_heads << "), head_size " << c.head_size << "\n";
      std::cout << "kv cache: " << summary.kv_bytes_per_token << " bytes/token ("
                << summary.kv_element_type << "), "
                << Mib(summary.kv_bytes_per_token * static_cast<uint64_t>(c.context_length))
                << " at context_length\n";
    }
    std::cout << "inputs:\n";
    for (const auto& t : summary.inputs)
      std::cout << "  " << t.name << " " << t.type << " " << Shape(t.shape) << "\n";
    std::cout << "outputs:\n";
    for (const auto& t : summary.outputs)
      std::cout << "  " << t.name << " " << t.type << " " << Shape(t.shape) << "\n";
  });
}

}  // namespace ebb::cli
