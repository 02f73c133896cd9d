#include "model/model_info.h"

#include <onnxruntime_cxx_api.h>

#include <optional>

#include "core/files.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "model/cpu_ops_rewrite.h"
#include "model/ep_placement.h"
#include "model/graph_ops.h"
#include "model/model_device.h"
#include "model/model_kernels.h"
#include "ort/cpu_kernels.h"
#include "ort/device_target.h"
#include "ort/execution_providers.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
#include "ort/provider_plan.h"
#include "ort/session_options.h"

namespace ebb::internal {
namespace {

std::vector<TensorInfo> Describe(Ort::Session& session, bool inputs) {
  Ort::AllocatorWithDefaultOptions alloc;
  const size_t n = inputs ? session.GetInputCount() : session.GetOutputCount();
  std::vector<TensorInfo> out;
  for (size_t i = 0; i < n; ++i) {
    TensorInfo t;
    t.name = (inputs ? session.GetInputNameAllocated(i, alloc)
                     : session.GetOutputNameAllocated(i, alloc))
                 .get();
    Ort::TypeInfo ti = inputs ? session.GetInputTypeInfo(i) : session.GetOutputTypeInfo(i);
    if (ti.GetONNXType() == ONNX_TYPE_TENSOR) {
      auto tsi = ti.GetTensorTypeAndShapeInfo();
      t.type = ElementTypeName(tsi.GetElementType());
      std::vector<int64_t> dims = tsi.GetShape();
      std::vector<const char*> sym(dims.size(), nullptr);
      tsi.GetSymbolicDimensions(sym.data(), sym.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] >= 0) {
          t.shape.push_back(std::to_string(dims[d]));
        } else {
          t.shape.push_back(sym[d] != nullptr && *sym[d] != '\0' ? sym[d] : "?");
        }
      }
    } else {
      t.type = "non-tensor";
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::string ElementTypeName(int type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return "bool";
    default:
      return "type" + std::to_string(type);
  }
}

ModelFolderInfo DescribeModel(const std::filesystem::path& dir,
                              const std::string& execution_provider) {
  ModelFolderInfo s;
  s.config = LoadModelFolderConfig(dir);
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(s.config.model_path.parent_path(), ec)) {
    const auto name = entry.path().filename().string();
    const auto stem = s.config.model_path.filename().string();
    if (entry.is_regular_file() && name.rfind(stem, 0) == 0)
      s.model_file_bytes += entry.file_size();
  }
  const GenaiConfig& c = s.config;
  EnsureOrtApi();
  Ort::SessionOptions so;
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_DISABLE_ALL);
  so.SetIntraOpNumThreads(1);
  // A graph with custom ops opens only with their library registered (the config's, as a load
  // registers it; errors name the path).
  for (const auto& [key, value] : c.session_options) {
    if (key == "custom_ops_library") {
      RegisterCustomOps(so, key, value);
      s.custom_ops_library = value;
    }
  }
  std::optional<DeviceTarget> device;
  if (!execution_provider.empty()) {
    ModelOptions o;
    o.execution_provider = execution_provider;
    const ProviderPlan plan = ResolveProviders(c.provider_options, o);
    device = KvDeviceFor(plan);
    if (device) {
      so.AddConfigEntry("session.record_ep_graph_assignment_info", "1");
      s.device = device->Name();
      s.adapter = DescribeProviderAdapter(device->provider);
    }
    AppendExecutionProviders(so, c.provider_options, o);  // Unavailable: no usable device
  }
  try {
    Ort::Session session(OrtEnvironment(), c.model_path.c_str(), so);
    s.inputs = Describe(session, true);
    s.outputs = Describe(session, false);
    if (device) {
      s.placement = DescribeEpPlacement(ReadEpPlacement(session), device->provider,
                                        OrtProviderName(device->provider));
    }
  } catch (const Ort::Exception& e) {
    if (const std::string hint = UnregisteredOpHint(e.what(), s.custom_ops_library);
        !hint.empty()) {
      throw Error(ErrorCode::InvalidArgument, c.model_path.string() + ": " + hint + " (" +
                                                  EscapeForMessage(e.what(), 600) + ")");
    }
    throw Error(ErrorCode::InvalidArgument,
                c.model_path.string() + ": ONNX Runtime cannot load the model: " + e.what() +
                    "; the file may be corrupt or truncated");
  }
  // The config's providers, as a load without execution_provider resolves them. ORT opened the
  // graph above, so its operators can be listed.
  std::string accelerator;
  try {
    ModelOptions o;
    o.execution_provider = execution_provider;
    accelerator = ResolveProviders(c.provider_options, o).FirstAccelerator();
  } catch (const Error&) {
    // A provider the config names that ebb does not know: a load says so; info shows the CPU's.
  }
  // As a load with default options runs it: ebb's kernels where cpu_ops (default auto) moves
  // nodes.
  std::map<OpId, int> ops = GraphOps(c.model_path);
  const std::string library = s.custom_ops_library == "none" ? "" : s.custom_ops_library;
  const std::string cpu_ops = ModelOptions{}.cpu_ops;
  const CpuOpsDecision moved = DecideCpuOps(c, cpu_ops, !accelerator.empty(), library);
  if (moved.kinds.any()) ApplyCpuOpsToKernels(moved.plan, &ops);
  s.kernels =
      DescribeModelKernels(ops, CpuFlags(), library, accelerator, moved.kinds.any() ? cpu_ops : "");
  if (!s.placement.empty()) s.kernels += "; " + s.placement;
  if (!c.is_encoder) {
    // The KV element size is the graph's (the first layer's past input), as BuildModel uses.
    const std::string past =
        LayerName(c.io.past_combined.empty() ? c.io.past_key : c.io.past_combined, 0);
    s.kv_element_type = ElementTypeName(ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    for (const auto& t : s.inputs) {
      if (t.name == past) s.kv_element_type = t.type;
    }
    const uint64_t elem = s.kv_element_type == "float16" ? 2 : 4;
    s.kv_bytes_per_token = 2ull * c.num_hidden_layers * c.num_key_value_heads * c.head_size * elem;
  }
  return s;
}

nlohmann::json ModelFolderInfoJson(const ModelFolderInfo& s) {
  const GenaiConfig& c = s.config;
  nlohmann::json j;
  j["path"] = c.dir.string();
  j["type"] = c.model_type;
  j["encoder"] = c.is_encoder;
  j["vocab_size"] = c.vocab_size;
  j["context_length"] = c.context_length;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_size"] = c.head_size;
  j["hidden_size"] = c.hidden_size;
  j["model_file"] = c.model_path.filename().string();
  j["model_file_bytes"] = s.model_file_bytes;
  j["kv_bytes_per_token"] = s.kv_bytes_per_token;
  j["kv_element_type"] = s.kv_element_type;
  j["kernels"] = s.kernels;
  j["device"] = s.device.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.device);
  j["adapter"] = s.adapter.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.adapter);
  j["custom_ops_library"] =
      s.custom_ops_library.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.custom_ops_library);
  for (const auto* list : {&s.inputs, &s.outputs}) {
    auto& arr = j[list == &s.inputs ? "inputs" : "outputs"];
    arr = nlohmann::json::array();
    for (const auto& t : *list)
      arr.push_back({{"name", t.name}, {"type", t.type}, {"shape", t.shape}});
  }
  return j;
}

std::unique_ptr<ChatTemplate> LoadChatTemplateOption(const std::filesystem::path& dir,
                                                     const std::string& value) {
  if (IsChatTemplateText(value)) {
    try {
      return ChatTemplate::ParseForModelDir(value, "chat_template", dir);
    } catch (const Error& e) {
      throw Error(e.code(),
                  std::string("the chat_template option's template does not parse: ") + e.what());
    }
  }
  const std::filesystem::path file(value);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw Error(ErrorCode::NotFound,
                "chat_template=" + EscapeForMessage(value, 1024) +
                    ": no such file (give a Jinja chat template file, as tokenizer_config.json's "
                    "\"chat_template\", or the template text itself)");
  }
  try {
    return ChatTemplate::ParseForModelDir(
        ReadRegularFile(file, kMaxConfigFileBytes, "chat template file"), file.string(), dir);
  } catch (const Error& e) {
    throw Error(e.code(), "chat_template=" + EscapeForMessage(value, 1024) +
                              " is not a chat template ebb can render: " + e.what());
  }
}

}  // namespace ebb::internal
