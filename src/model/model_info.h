// What a model folder is, without loading it (for `ebb info`, the service's checks and the load
// progress line): the config plus the ONNX graph's
// interface. (A loaded model's runtime entry is ebb::ModelSummary, ebb/runtime.h: another thing.)
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ebb/chat_template.h"
#include "model/genai_config.h"

namespace ebb::internal {

struct TensorInfo {
  std::string name;
  std::string type;                // "float32", "int64", ...
  std::vector<std::string> shape;  // symbolic dims by name, fixed ones as numbers
};

struct ModelFolderInfo {
  GenaiConfig config;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  uint64_t model_file_bytes = 0;  // the .onnx file plus its external data files
  // KV bytes per token of context (all layers, K and V, batch 1): the config's shape times the
  // element size of the graph's past KV inputs.
  uint64_t kv_bytes_per_token = 0;
  std::string kv_element_type;  // "float32" or "float16"; empty for an encoder
  // The config's session_options.custom_ops_library (resolved against the folder); "" = none.
  std::string custom_ops_library;
  // What the graph's heavy operators run on with the config's providers (model_kernels.h), as
  // ModelInfo::kernels says for a loaded model.
  std::string kernels;
  // With DescribeModel's execution_provider: the KV device ("webgpu:0"; "" = CPU), its adapter
  // (model_device.h DescribeProviderAdapter) and where ORT placed the nodes (ep_placement.h).
  std::string device;
  std::string adapter;
  std::string placement;
};

// Loads the config and opens the graph in ORT (CPU, no optimization) to read its interface.
// Throws ebb::Error naming the file on any failure.
// `execution_provider`: open the graph on that provider instead of the config's list ("" = the
// config's, without appending them: the kernels line names the config's accelerator). With an
// accelerator, the session is created on it: an unusable provider or device throws what a load
// throws (Unavailable, naming the fix), and `device`, `adapter` and `placement` are filled.
ModelFolderInfo DescribeModel(const std::filesystem::path& dir,
                              const std::string& execution_provider = "");

// `ebb info --json`'s "model" document.
nlohmann::json ModelFolderInfoJson(const ModelFolderInfo& s);

// The bytes a load of `dir` would charge to memory.limit at least (its weight files), read from
// the folder's config without loading. A load with cpu_ops and no cache entry to map its repacked
// weights from charges that copy too (ModelImpl::repacked_anon_bytes). Throws what reading the
// config throws (NotFound, ...).
uint64_t EstimateWeightsBytes(const std::filesystem::path& dir);

// The chat_template option (ebb/options.h) parsed for the model folder `dir`: the template text
// itself, or a Jinja file. Throws NotFound (no such file) or InvalidArgument (the renderer's
// error, with the file's name, line and column). BuildModel calls it before anything heavy; a
// service calls it at start (ModelManager::CheckModels).
std::unique_ptr<ChatTemplate> LoadChatTemplateOption(const std::filesystem::path& dir,
                                                     const std::string& value);

// Element type name used in summaries and error messages.
std::string ElementTypeName(int onnx_element_type);

}  // namespace ebb::internal
