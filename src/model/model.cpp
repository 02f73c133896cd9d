#include "ebb/model.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <set>

#include "core/log.h"
#include "ebb/error.h"
#include "model/model_impl.h"
#include "model/model_info.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
#include "ort/session_options.h"

namespace ebb {
namespace internal {
namespace {

std::vector<std::pair<std::string, ONNXTensorElementDataType>> GraphNames(Ort::Session& s,
                                                                          bool inputs) {
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<std::pair<std::string, ONNXTensorElementDataType>> out;
  const size_t n = inputs ? s.GetInputCount() : s.GetOutputCount();
  for (size_t i = 0; i < n; ++i) {
    std::string name =
        (inputs ? s.GetInputNameAllocated(i, alloc) : s.GetOutputNameAllocated(i, alloc)).get();
    Ort::TypeInfo ti = inputs ? s.GetInputTypeInfo(i) : s.GetOutputTypeInfo(i);
    ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (ti.GetONNXType() == ONNX_TYPE_TENSOR) t = ti.GetTensorTypeAndShapeInfo().GetElementType();
    out.emplace_back(std::move(name), t);
  }
  return out;
}

bool IsIndexType(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
}

bool IsFloatType(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

// Resolves the config's names against the graph; every problem names the file and the tensor.
DecoderIo ResolveIo(const GenaiConfig& cfg, Ort::Session& session) {
  const auto inputs = GraphNames(session, true);
  const auto outputs = GraphNames(session, false);
  auto find = [](const auto& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == name; });
  };
  const std::string where = cfg.model_path.string() + ": ";
  auto require = [&](const auto& list, const std::string& name, const char* kind,
                     const char* field) {
    auto it = find(list, name);
    if (it == list.end()) {
      std::string have;
      for (const auto& p : list) have += (have.empty() ? "" : ", ") + p.first;
      throw Error(ErrorCode::InvalidArgument,
                  where + "the graph has no " + kind + " '" + name + "' named by " +
                      cfg.config_path.filename().string() + " " + field + "; the graph's " + kind +
                      "s are: " + have);
    }
    return it->second;
  };

  DecoderIo io;
  std::set<std::string> used;
  io.input_ids = cfg.io.input_ids;
  io.input_ids_type = require(inputs, io.input_ids, "input", "/model/decoder/inputs/input_ids");
  used.insert(io.input_ids);
  if (!IsIndexType(io.input_ids_type)) {
    throw Error(ErrorCode::InvalidArgument, where + "input '" + io.input_ids +
                                                "' must be int32 or int64, got " +
                                                ElementTypeName(io.input_ids_type));
  }
  if (auto it = find(inputs, cfg.io.attention_mask); it != inputs.end()) {
    io.attention_mask = it->first;
    io.attention_mask_type = it->second;
    used.insert(it->first);
  }
  if (auto it = find(inputs, cfg.io.position_ids); it != inputs.end()) {
    io.position_ids = it->first;
    io.position_ids_type = it->second;
    used.insert(it->first);
  }
  io.logits = cfg.io.logits;
  io.logits_type = require(outputs, io.logits, "output", "/model/decoder/outputs/logits");
  if (!IsFloatType(io.logits_type)) {
    throw Error(ErrorCode::InvalidArgument, where + "output '" + io.logits +
                                                "' must be float32 or float16, got " +
                                                ElementTypeName(io.logits_type));
  }
  io.combined_kv = !cfg.io.past_combined.empty();
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    std::vector<std::pair<std::string, std::string>> pairs;
    if (io.combined_kv) {
      pairs.emplace_back(LayerName(cfg.io.past_combined, l), LayerName(cfg.io.present_combined, l));
    } else {
      pairs.emplace_back(LayerName(cfg.io.past_key, l), LayerName(cfg.io.present_key, l));
      pairs.emplace_back(LayerName(cfg.io.past_value, l), LayerName(cfg.io.present_value, l));
    }
    for (const auto& [past, present] : pairs) {
      const auto t = require(inputs, past, "input", "/model/decoder/inputs (past names)");
      require(outputs, present, "output", "/model/decoder/outputs (present names)");
      if (!IsFloatType(t)) {
        throw Error(ErrorCode::InvalidArgument,
                    where + "KV input '" + past + "' must be float32 or float16");
      }
      io.kv_type = t;
      io.past_names.push_back(past);
      io.present_names.push_back(present);
      used.insert(past);
    }
  }
  for (const auto& [name, type] : inputs) {
    if (!used.count(name)) {
      throw Error(ErrorCode::InvalidArgument,
                  where + "graph input '" + name +
                      "' is not one ebb knows how to feed (input_ids, attention_mask, "
                      "position_ids, past KV); check the names in " +
                      cfg.config_path.filename().string());
    }
  }
  if (cfg.num_hidden_layers * (io.combined_kv ? 1 : 2) !=
      static_cast<int>(std::count_if(inputs.begin(), inputs.end(), [&](const auto& p) {
        return std::find(io.past_names.begin(), io.past_names.end(), p.first) !=
               io.past_names.end();
      }))) {
    throw Error(ErrorCode::InvalidArgument, where + "KV inputs do not match num_hidden_layers");
  }
  return io;
}

}  // namespace

Ort::RunOptions ModelImpl::MakeRunOptions() const {
  Ort::RunOptions ro;
  for (const auto& [k, v] : run_options) ro.AddConfigEntry(k.c_str(), v.c_str());
  return ro;
}

}  // namespace internal

Model::Model(std::unique_ptr<internal::ModelImpl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

const ModelInfo& Model::info() const { return impl_->info; }
const ModelOptions& Model::options() const { return impl_->options; }

KvStats Model::kv_stats() const {
  const auto s = impl_->kv_pool->Stats();
  KvStats k;
  k.in_use_bytes = s.in_use_bytes;
  k.reserved_bytes = s.reserved_bytes;
  k.peak_in_use_bytes = s.peak_in_use_bytes;
  k.max_bytes = s.max_bytes;
  k.retain_limit_bytes = s.retain_limit_bytes;
  k.num_allocations = s.num_allocations;
  k.num_refusals = s.num_refusals;
  return k;
}

std::shared_ptr<Model> Model::Load(const std::filesystem::path& dir, const ModelOptions& options) {
  using namespace internal;
  EnsureOrtApi();
  auto impl = std::make_unique<ModelImpl>();
  impl->config = LoadGenaiConfig(dir);
  impl->options = options;
  const GenaiConfig& cfg = impl->config;
  if (cfg.is_encoder) {
    throw Error(ErrorCode::InvalidArgument,
                cfg.config_path.string() + ": /model/type: '" + cfg.model_type +
                    "' is an encoder (embedding) model; Model::Load is for decoders");
  }

  Ort::SessionOptions so = BuildSessionOptions(cfg, options);
  try {
    impl->session = std::make_unique<Ort::Session>(OrtEnvironment(), cfg.model_path.c_str(), so);
  } catch (const Ort::Exception& e) {
    const std::string msg = e.what();
    // ORT reports bad config values at session creation; point at the options, else the file.
    const bool option_error =
        msg.find("onfig") != std::string::npos && msg.find("session") != std::string::npos;
    throw Error(ErrorCode::InvalidArgument,
                cfg.model_path.string() + ": ONNX Runtime could not create a session: " + msg +
                    (option_error ? "; check the session options"
                                  : "; the model file may be corrupt, truncated or not ONNX"));
  }
  impl->io = ResolveIo(cfg, *impl->session);
  impl->cpu_memory = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  impl->run_options = cfg.run_options;
  for (const auto& [k, v] : options.run_options) {
    auto it = std::find_if(impl->run_options.begin(), impl->run_options.end(),
                           [&](const auto& p) { return p.first == k; });
    if (it != impl->run_options.end()) {
      it->second = v;
    } else {
      impl->run_options.emplace_back(k, v);
    }
  }
  // onnxruntime-genai's configs carry an empty "memory.enable_memory_arena_shrinkage"; an
  // empty value names no device, so it is dropped rather than passed to every Run().
  std::erase_if(impl->run_options, [](const auto& p) { return p.second.empty(); });
  impl->kv_pool = std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes);

  ModelInfo& info = impl->info;
  info.path = cfg.dir;
  info.type = cfg.model_type;
  info.vocab_size = cfg.vocab_size;
  info.context_length = cfg.context_length;
  info.num_layers = cfg.num_hidden_layers;
  info.num_kv_heads = cfg.num_key_value_heads;
  info.head_size = cfg.head_size;
  info.past_present_share_buffer = cfg.search.past_present_share_buffer && !impl->io.combined_kv;
  info.eos_token_ids = cfg.eos_token_ids;
  info.pad_token_id = cfg.pad_token_id >= 0
                          ? cfg.pad_token_id
                          : (cfg.eos_token_ids.empty() ? 0 : cfg.eos_token_ids[0]);
  info.bos_token_id = cfg.bos_token_id;
  const size_t elem = impl->io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  info.kv_bytes_per_token =
      2ull * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_size * elem;
  EBB_LOG_INFO("loaded {} ({}, {} layers, kv {} B/token, kv_cache.mode={})", cfg.dir.string(),
               cfg.model_type, cfg.num_hidden_layers, info.kv_bytes_per_token,
               KvModeName(options.kv_mode));
  return std::shared_ptr<Model>(new Model(std::move(impl)));
}

}  // namespace ebb
