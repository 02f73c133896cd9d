// A model's graph inputs and outputs, resolved at load against genai_config.json's names: what a
// generator (DecoderIo) or an embedding call (EncoderIo) feeds and reads. Every problem names
// the model file and the tensor.
// Thread-safety: pure functions of their arguments (the session is only inspected).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/genai_config.h"

namespace ebb::internal {

// What the generator must feed and read, resolved against the graph at load time.
struct DecoderIo {
  std::string input_ids;
  ONNXTensorElementDataType input_ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::string attention_mask;  // empty: the graph has none
  ONNXTensorElementDataType attention_mask_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::string position_ids;  // empty: the graph has none
  ONNXTensorElementDataType position_ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  bool combined_kv = false;                // gpt2 "past_%d": [2, B, H, S, D]
  std::vector<std::string> past_names;     // per layer: K, V (or one combined)
  std::vector<std::string> present_names;  // same order
  ONNXTensorElementDataType kv_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  std::string logits;
  ONNXTensorElementDataType logits_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  // Non-empty when the graph was rewritten for last-position logits (last_logits.h): feed it
  // int64 [B] flat indices (b * S + the position row b samples); logits are then [B, 1, vocab].
  std::string logits_index;
};

// What an encoder (ModelInfo::is_encoder) must feed and read, resolved against the graph.
struct EncoderIo {
  std::string input_ids;
  ONNXTensorElementDataType input_ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::string attention_mask;  // empty: the graph has none
  ONNXTensorElementDataType attention_mask_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::string token_type_ids;  // empty: the graph has none (fed as zeros otherwise)
  ONNXTensorElementDataType token_type_ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::string last_hidden_state;  // [B, S, H]; empty: the graph has none
  std::string pooled;             // sentence_embedding or pooler_output [B, H]; empty: none
  int32_t hidden_size = 0;        // from the config or the graph; 0: known after the first Run
};

// Resolves a decoder's inputs and outputs against the graph. Throws ebb::Error
// (InvalidArgument) naming the file and the tensor that is missing or of the wrong type.
DecoderIo ResolveIo(const GenaiConfig& cfg, Ort::Session& session);
// The same for an encoder (ModelInfo::is_encoder).
EncoderIo ResolveEncoderIo(const GenaiConfig& cfg, Ort::Session& session);

}  // namespace ebb::internal
