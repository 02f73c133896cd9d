// Execution provider names: one vocabulary everywhere. genai_config.json, provider_options keys,
// the execution_provider option and --ep accept ebb's short names ("cpu", "cuda", "dml", ...),
// ORT's registered names ("CUDAExecutionProvider", "DmlExecutionProvider", ...) and common
// spellings ("DirectML", "TensorRT"), in any case; ebb maps them to one canonical short name.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace ebb::internal {

// The canonical short name: "cpu", "cuda", "dml", "tensorrt", "rocm", "migraphx", "openvino",
// "qnn", "coreml", "xnnpack", "webgpu", "nnapi", "vitisai", "azure". A name ebb does not know
// is returned as given (ORT may know it).
std::string CanonicalProviderName(std::string_view name);

// ORT's registered name for a canonical short name ("cuda" -> "CUDAExecutionProvider"); "" for a
// name ebb does not know.
std::string OrtProviderName(std::string_view canonical);

// The name ORT's generic SessionOptionsAppendExecutionProvider takes ("qnn" -> "QNN"); a name ebb
// does not know is returned as given.
std::string OrtAppendName(std::string_view canonical);

// A readable name for messages: "CUDA (cuda, CUDAExecutionProvider)".
std::string DescribeProvider(std::string_view canonical);

// Why this ORT build cannot run `canonical` and how to run the model anyway; `where` says who
// asked for it (e.g. "genai_config.json", "provider_options", "execution_provider"). A non-empty
// `load_error` is ORT's reason when it lists the provider but cannot add it (e.g. the pinned
// onnxruntime-node build lists CUDA, TensorRT and WebGPU without shipping their libraries).
std::string MissingProviderMessage(std::string_view canonical, std::string_view where,
                                   std::string_view available, std::string_view load_error = {});

}  // namespace ebb::internal
