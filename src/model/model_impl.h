// Internal state of a loaded decoder model (ebb::Model). Shared by generators.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"
#include "kv/kv_pool.h"
#include "memory/shrink_controller.h"
#include "model/genai_config.h"
#include "ort/env_arena.h"

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
};

struct ModelImpl {
  GenaiConfig config;
  ModelOptions options;
  ModelInfo info;
  DecoderIo io;
  // Declared before the session so that it is released after it: the env arena the session
  // allocates from must outlive the session.
  std::unique_ptr<EnvArenaLease> env_arena;
  std::unique_ptr<Ort::Session> session;
  Ort::MemoryInfo cpu_memory{nullptr};
  bool has_cpu_arena = true;   // enable_cpu_mem_arena (config, then user)
  bool registered = false;     // counted by the MemoryGovernor
  uint64_t arena_max_mem = 0;  // arena.max_mem when set (process-wide env arena)
  std::unique_ptr<KvPool> kv_pool;
  // Run options (config, then user, then RuntimeHandle) and the shrink policies.
  std::unique_ptr<ShrinkController> shrink;
  std::unique_ptr<Tokenizer> tokenizer;  // null: the folder has no tokenizer.json
  std::mutex chat_template_mu;
  std::unique_ptr<ChatTemplate> chat_template;  // guarded by chat_template_mu; loaded on use
};

}  // namespace ebb::internal
