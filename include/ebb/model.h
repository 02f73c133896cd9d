// ebb/model.h — a loaded onnxruntime-genai model folder.
//
// Ownership: ebb::LoadModel (ebb/runtime.h) and Runtime::Load return a shared_ptr. Generators hold
// a reference, so a Model lives until its last generator is gone; destroying it releases its ORT
// session and its KV pool. Thread-safety: a Model is shared by many generators on many threads;
// every const method and every Generator operation on distinct generators may run concurrently.
// State after failure: a failed Load leaves nothing loaded and nothing allocated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ebb/export.h"
#include "ebb/model_controls.h"
#include "ebb/options.h"
#include "ebb/stats.h"

namespace ebb {

class Tokenizer;
class ChatTemplate;

struct ModelInfo {
  std::filesystem::path path;
  std::string type;  // genai_config model.type
  bool is_encoder = false;
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_size = 0;
  // The decoder graph uses GroupQueryAttention: rows are right-padded (GQA reads each row's
  // length from the attention mask). Other graphs are left-padded, like GPT-2.
  bool uses_gqa = false;
  // Past and present share one KV buffer: genai_config.json search.past_present_share_buffer, on a
  // GQA graph (others always use two buffers, ping-pong).
  bool past_present_share_buffer = false;
  // A Run computes logits only at the position each row samples: prefill_logits=last rewrote
  // the graph at load (false: [B, S, vocab] per Run, prefill_logits=all or a graph the rewrite
  // does not apply to, see the load log).
  bool last_position_logits = false;
  std::vector<int32_t> eos_token_ids;
  int32_t pad_token_id = 0;
  int32_t bos_token_id = -1;
  uint64_t kv_bytes_per_token = 0;  // per sequence, all layers, K and V
  // The kernels the graph's heavy operators run on, for people, e.g. "MatMulNBits x85: MLAS
  // AVX512VNNI; GroupQueryAttention x12: ORT CPU"; a custom op names its library. Derived from
  // the graph's operators and the CPU's flags (ORT does not report its choice);
  // docs/architecture.md "Kernels".
  std::string kernels;
};

class Runtime;
class Model;

// A loaded model. Created by Runtime::Load (named, in a runtime's registry) or ebb::LoadModel
// (ebb/runtime.h: in Runtime::Default(), under an automatic id "#N").
class EBB_API Model : public std::enable_shared_from_this<Model> {
 public:
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // The id in its runtime's registry ("#N" for ebb::LoadModel).
  const std::string& id() const;
  const ModelInfo& info() const;
  const ModelOptions& options() const;
  // The model's KV pool (ebb/stats.h KvStats; every field filled).
  KvStats kv_stats() const;
  // Generators alive on this model now (each holds a reference and may hold KV).
  int num_live_generators() const;
  // Bytes of the model's weights as memory.limit charges them: its weight files (the .onnx file
  // and its external data), plus ebb's int4 matmul's repacked copy where it is anonymous memory
  // (cpu_ops without a model-cache entry to map it from; docs/cpu_ops.md "Memory").
  uint64_t weights_bytes() const;
  // MemoryStats::weights.state (anonymous, file-backed, released, broken) without the /proc
  // reads of runtime().Stats(): cheap enough for every request.
  WeightsState weights_state() const;
  // The model's runtime handle (Tier 2 controls, ebb/model_controls.h): shrink now / after the
  // next request / every N, run options, and the model's memory figures (Stats()). The name is
  // the Python SDK's (model.runtime), so code reads the same on both.
  ModelControls& runtime() { return controls_; }
  const ModelControls& runtime() const { return controls_; }

  // The folder's tokenizer.json, loaded with the model (a tokenizer.json that does not load
  // fails Load). nullptr when the folder has none. Owned by the model; immutable.
  const Tokenizer* tokenizer() const;
  // The chat template that renders messages: the one given at load (the chat_template option,
  // parsed by Load), else the folder's (ChatTemplate::FromModelDir), loaded on first use and
  // then kept. Throws ebb::Error(InvalidArgument) when there is none (the message names the
  // fixes: the chat_template option, or a plain prompt) or when the folder's does not parse (a
  // later call tries again). Owned by the model; immutable; thread-safe.
  const ChatTemplate& chat_template() const;
  // Whether chat_template() has a template to return (one that does not parse counts: it
  // exists). Lets a surface answer "no chat template" with its own status before a request.
  bool has_chat_template() const;

 protected:
  Model() = default;  // only the library's concrete model derives from Model

 private:
  ModelControls controls_{this};
};

}  // namespace ebb
