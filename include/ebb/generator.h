// ebb/generator.h — token generation with a KV cache the generator owns.
//
// Ownership: a Generator holds a shared reference to its Model and owns its KV cache. The KV
// memory is allocated from the model's KvPool when the generator is created (static mode) or
// as the sequence grows (dynamic mode), and returned when the generator is destroyed: beyond
// kv_cache.retain_bytes it goes back to the OS at once.
// Thread-safety: one Generator is used by one thread at a time. Different generators of the
// same model may run concurrently on different threads.
// State after failure: a call that throws leaves the generator as it was before the call (the
// KV cache and sequences are unchanged), except where a method says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ebb/export.h"
#include "ebb/options.h"

namespace ebb {

class Model;

// Parameters of one generation. Unset fields take the model's genai_config.json `search` block,
// then ebb's default (precedence: ebb defaults, then the config, then the caller), as
// onnxruntime-genai does. docs/options.md lists them as the "request" keys.
struct EBB_API GeneratorParams {
  // Total tokens per sequence (prompt + generated). 0: the config's search.max_length, else
  // context_length. Values above the model's context_length are clamped to it (logged).
  int32_t max_length = 0;
  int32_t batch_size = 1;
  std::optional<bool> do_sample;              // default false: greedy
  std::optional<int32_t> top_k;               // default 0: off
  std::optional<float> top_p;                 // default 1: off
  std::optional<float> temperature;           // default 1
  std::optional<float> repetition_penalty;    // default 1: off
  uint64_t seed = 0;                          // same seed, same tokens
  std::optional<KvMode> kv_mode;              // unset: the model's kv_cache.mode
  std::optional<int32_t> prefill_chunk_size;  // unset: the model's prefill_chunk_size

  // Sets one request key of the option table ("temperature", "max_length", "kv_cache.mode",
  // ...). Throws ebb::Error(InvalidArgument) for a bad value, an unknown key (with a
  // suggestion) or a key of another scope (naming where it belongs).
  void Set(std::string_view key, std::string_view value);
};

struct GeneratorStats {
  double ttft_ms = 0;              // first AppendTokens call to the first sampled token
  double decode_tokens_per_s = 0;  // tokens after the first / time after the first
  uint64_t prompt_tokens = 0;      // tokens fed by AppendTokens (all rows)
  uint64_t generated_tokens = 0;   // tokens sampled (all rows)
  uint64_t model_runs = 0;         // ORT Run() calls
  uint64_t kv_bytes = 0;           // KV memory this generator holds now
};

class EBB_API Generator {
 public:
  // Throws InvalidArgument for bad params, ResourceExhausted when the KV cache would go over
  // kv_cache.max_bytes or memory.limit (nothing is allocated then), and FailedPrecondition when
  // the model was unloaded (Runtime::Unload).
  Generator(std::shared_ptr<Model> model, const GeneratorParams& params);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Appends a prompt to a batch of one and runs it through the model.
  void AppendTokens(std::span<const int32_t> tokens);
  // Appends one prompt per row (rows may differ in length; they are padded as the graph needs).
  // With batch_size > 1 this is allowed once, before any generation.
  void AppendTokens(const std::vector<std::vector<int32_t>>& rows);

  // Samples the next token of every unfinished row and appends it.
  void GenerateNextToken();
  // True when every row has produced an EOS token or reached max_length.
  bool IsDone() const;

  std::span<const int32_t> GetSequence(size_t row) const;
  // The tokens sampled by the last GenerateNextToken, one per row.
  std::vector<int32_t> GetNextTokens() const;
  // Logits of the last position, [batch_size * vocab_size], as float32. Empty before any step.
  std::span<const float> GetLogits() const;

  // Truncates the (batch of one) sequence to `length` tokens, keeping the KV buffers.
  void RewindTo(size_t length);

  int32_t max_length() const;
  GeneratorStats Stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb
