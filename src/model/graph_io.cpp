#include "model/graph_io.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "model/last_logits.h"
#include "model/model_info.h"

namespace ebb::internal {
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

}  // namespace

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
  // The config's vocab_size sizes every logits buffer: it must be the graph's own width when
  // the graph states one (a wrong one read garbage or sized buffers by a corrupt number).
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    Ort::AllocatorWithDefaultOptions alloc;
    if (session.GetOutputNameAllocated(i, alloc).get() != io.logits) continue;
    const std::vector<int64_t> dims =
        session.GetOutputTypeInfo(i).GetTensorTypeAndShapeInfo().GetShape();
    if (!dims.empty() && dims.back() > 0 && dims.back() != cfg.vocab_size) {
      throw Error(
          ErrorCode::InvalidArgument,
          where + "genai_config.json's model.vocab_size is " + std::to_string(cfg.vocab_size) +
              " but the graph's '" + io.logits + "' output is " + std::to_string(dims.back()) +
              " wide; fix vocab_size in genai_config.json to " + std::to_string(dims.back()));
    }
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
  if (auto it = find(inputs, kLogitsIndexInput); it != inputs.end()) {
    io.logits_index = kLogitsIndexInput;
    used.insert(io.logits_index);
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

// An encoder's graph: index inputs among input_ids / attention_mask / token_type_ids (config
// names), and last_hidden_state and/or a pooled output (sentence_embedding, pooler_output).
EncoderIo ResolveEncoderIo(const GenaiConfig& cfg, Ort::Session& session) {
  const auto inputs = GraphNames(session, true);
  const auto outputs = GraphNames(session, false);
  const std::string where = cfg.model_path.string() + ": ";
  auto list = [](const auto& v) {
    std::string out;
    for (const auto& p : v) out += (out.empty() ? "" : ", ") + p.first;
    return out;
  };
  EncoderIo io;
  const EncoderIoNames& n = cfg.encoder_io;
  for (const auto& [name, type] : inputs) {
    std::string* slot = nullptr;
    ONNXTensorElementDataType* slot_type = nullptr;
    if (name == n.input_ids) {
      slot = &io.input_ids;
      slot_type = &io.input_ids_type;
    } else if (name == n.attention_mask) {
      slot = &io.attention_mask;
      slot_type = &io.attention_mask_type;
    } else if (name == n.token_type_ids) {
      slot = &io.token_type_ids;
      slot_type = &io.token_type_ids_type;
    } else {
      throw Error(ErrorCode::InvalidArgument,
                  where + "encoder input '" + name + "' is not one ebb knows how to feed (" +
                      n.input_ids + ", " + n.attention_mask + ", " + n.token_type_ids + ")");
    }
    if (!IsIndexType(type)) {
      throw Error(
          ErrorCode::InvalidArgument,
          where + "input '" + name + "' must be int32 or int64, got " + ElementTypeName(type));
    }
    *slot = name;
    *slot_type = type;
  }
  if (io.input_ids.empty()) {
    throw Error(ErrorCode::InvalidArgument, where + "the encoder graph has no input '" +
                                                n.input_ids + "'; its inputs are: " + list(inputs));
  }
  for (const auto& [name, type] : outputs) {
    // sentence-transformers' own ONNX export names the token vectors token_embeddings.
    const bool hidden = name == n.last_hidden_state ||
                        (name == "token_embeddings" && io.last_hidden_state != n.last_hidden_state);
    const bool pooled = name == "sentence_embedding" || name == "pooler_output";
    if (!hidden && !pooled) continue;
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      throw Error(ErrorCode::InvalidArgument,
                  where + "output '" + name + "' must be float32, got " + ElementTypeName(type));
    }
    if (hidden) io.last_hidden_state = name;
    // sentence_embedding (sentence-transformers' own pooling) wins over BERT's pooler_output.
    if (pooled && (io.pooled.empty() || name == "sentence_embedding")) io.pooled = name;
  }
  if (io.last_hidden_state.empty() && io.pooled.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                where + "the encoder graph has none of the outputs ebb reads (" +
                    n.last_hidden_state +
                    ", sentence_embedding, pooler_output); its outputs are: " + list(outputs));
  }
  io.hidden_size = cfg.hidden_size;
  return io;
}

}  // namespace ebb::internal
