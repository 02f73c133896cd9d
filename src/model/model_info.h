// A summary of a model folder for `ebb info`: the config plus the ONNX graph's interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/genai_config.h"

namespace ebb::internal {

struct TensorInfo {
  std::string name;
  std::string type;                // "float32", "int64", ...
  std::vector<std::string> shape;  // symbolic dims by name, fixed ones as numbers
};

struct ModelSummary {
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
};

// Loads the config and opens the graph in ORT (CPU, no optimization) to read its interface.
// Throws ebb::Error naming the file on any failure.
ModelSummary DescribeModel(const std::filesystem::path& dir);

nlohmann::json ToJson(const ModelSummary& s);

// Element type name used in summaries and error messages.
std::string ElementTypeName(int onnx_element_type);

}  // namespace ebb::internal
