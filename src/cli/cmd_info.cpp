// `ebb info MODEL_DIR [--json]`: runtime information and a summary of a model folder.
#include <iostream>

#include "cli/commands.h"
#include "ebb/version.h"
#include "model/model_info.h"

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

}  // namespace

void RegisterInfoCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the runtime and a model folder's summary");
  auto dir = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("MODEL_DIR", *dir, "onnxruntime-genai model folder")
      ->required()
      ->check(ModelDir());
  cmd->add_flag("--json", *as_json, "Print one JSON object");
  cmd->callback([dir, as_json] {
    const auto summary = internal::DescribeModel(*dir);
    if (*as_json) {
      nlohmann::json j;
      j["ebb_version"] = Version();
      j["onnxruntime_version"] = OrtVersion();
      j["execution_providers"] = AvailableProviders();
      j["cpu_kernels"] = CpuKernels();
      j["model"] = internal::ToJson(summary);
      std::cout << j.dump(2) << "\n";
      return;
    }
    const auto& c = summary.config;
    std::cout << "ebb " << Version() << " on onnxruntime " << OrtVersion() << " (";
    const auto eps = AvailableProviders();
    for (size_t i = 0; i < eps.size(); ++i) std::cout << (i ? ", " : "") << eps[i];
    std::cout << ")\n";
    std::cout << "kernels:  " << summary.kernels << "\n";
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
