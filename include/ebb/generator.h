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
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
  std::optional<bool> do_sample;            // default false: greedy
  std::optional<int32_t> top_k;             // default 0: off
  std::optional<float> top_p;               // default 1: off
  std::optional<float> temperature;         // default 1
  std::optional<float> repetition_penalty;  // default 1: off
  // OpenAI's penalties, -2 to 2 (0: off), over the tokens this generator sampled (still in the
  // sequence): logit[t] -= frequency_penalty * count[t] + presence_penalty * (count[t] > 0).
  // Applied after repetition_penalty, in greedy decoding too.
  float presence_penalty = 0;
  float frequency_penalty = 0;
  // Token id -> bias added to its logit before sampling (greedy too), -100 to 100 (OpenAI):
  // -100 in effect bans the token, 100 in effect forces it. Applied after the penalties. Ids
  // must be below the model's vocab_size (checked when the generator is created).
  std::map<int32_t, float> logit_bias;
  // Log-probabilities of the sampled tokens (GetNextLogprobs): log-softmax of the logits after
  // the penalties and logit_bias, before temperature, top_k and top_p. top_logprobs (0 to 20)
  // also gives that many most likely tokens at each step; > 0 turns logprobs on.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  uint64_t seed = 0;  // same seed, same tokens
  // cache_prompt: with the model's prefix cache on (prefix_cache.max_bytes > 0), start from the
  // KV of the longest stored prefix of the prompt and store this request's prefix when it ends
  // (batch_size 1; a larger batch only stores its rows). Same tokens either way.
  bool cache_prompt = true;
  // Structured output (docs/structured_output.md): at most one of these constrains the
  // generated tokens, so the text is JSON that json_schema accepts, text that regex matches as
  // a whole, or a sentence of grammar (GBNF). The token mask applies before logit_bias, the
  // penalties and sampling, and EOS is allowed only where the text is complete. "" = off.
  // An invalid or unsupported one makes the Generator constructor throw InvalidArgument.
  std::string json_schema;
  std::string regex;
  std::string grammar;
  // Literal text the constrained output starts and ends with around what json_schema, regex or
  // grammar describes (tool-call markers: "<tool_call>\n", "\n</tool_call>").
  std::string constraint_prefix;
  std::string constraint_suffix;
  // Lazy constraint: free text until the output contains this; from the trigger's first byte
  // the text must match prefix + constraint + suffix (so it starts with the trigger: checked),
  // and once matched whole the constraint waits for the trigger again (tool calls).
  std::string constraint_trigger;
  std::optional<KvMode> kv_mode;              // unset: the model's kv_cache.mode
  std::optional<int32_t> prefill_chunk_size;  // unset: the model's prefill_chunk_size

  // Sets one request key of the option table ("temperature", "max_length", "kv_cache.mode",
  // ...). logit_bias takes "ID=BIAS,ID=BIAS" or a JSON object {"ID": BIAS} and replaces the
  // whole map ("" clears it). Throws ebb::Error(InvalidArgument) for a bad value, an unknown key
  // (with a suggestion) or a key of another scope (naming where it belongs).
  void Set(std::string_view key, std::string_view value);
  // Field by field (a test ties each option-table default to its field's default with it).
  bool operator==(const GeneratorParams&) const = default;
};

// One token's log-probability (natural log).
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// A sampled token, its log-probability and the most likely tokens at that step (best first;
// ties: lower id first). See GeneratorParams::logprobs for the distribution.
struct TokenLogprobs {
  int32_t id = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;  // GeneratorParams::top_logprobs entries
};

struct GeneratorStats {
  double ttft_ms = 0;              // first AppendTokens call to the first sampled token
  double decode_tokens_per_s = 0;  // tokens after the first / time after the first
  uint64_t prompt_tokens = 0;      // tokens fed by AppendTokens (all rows)
  uint64_t generated_tokens = 0;   // tokens sampled (all rows)
  uint64_t model_runs = 0;         // ORT Run() calls
  uint64_t cached_tokens = 0;      // prompt tokens taken from the prefix cache (not prefilled)
  uint64_t kv_bytes = 0;           // KV memory this generator holds now
  // Structured output (json_schema, regex, grammar): time spent on token masks and following
  // the constraint, and tokens it forced without sampling (docs/structured_output.md).
  double constraint_ms = 0;
  uint64_t forced_tokens = 0;
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
  bool done() const;

  std::span<const int32_t> sequence(size_t row) const;
  // The tokens sampled by the last GenerateNextToken, one per row.
  std::vector<int32_t> GetNextTokens() const;
  // Their log-probabilities, one per row (a row that was already done: {pad id, 0, {}}). Empty
  // unless params.logprobs or params.top_logprobs > 0.
  std::vector<TokenLogprobs> GetNextLogprobs() const;
  // Logits of the last position, [batch_size * vocab_size], as float32. Empty before any step.
  // After a GenerateNextToken they are the previous step's until ComputeLogits (or the next
  // GenerateNextToken) runs the model on the token it sampled.
  std::span<const float> GetLogits() const;
  // Runs the model on the tokens sampled since the last run, so that GetLogits() holds the logits
  // the next GenerateNextToken samples from (as onnxruntime-genai's GetLogits does). No-op when
  // they are current or the generator is done. Throws FailedPrecondition before AppendTokens.
  void ComputeLogits();
  // A copy of one output of the decoder's last run (ComputeLogits runs the pending token first):
  //  - "logits": [batch_size, 1, vocab_size] float32, the last position (the LM head runs only
  //    there with prefill_logits=last);
  //  - a KV output by the graph's name ("present.0.key", "present_3", ...): the sequence's keys
  //    or values so far, [batch_size, kv_heads, length, head_size] ([2, batch_size, ...] for a
  //    graph with combined KV), `length` the KV columns (the longest row, padding included), in
  //    the KV's element type.
  // Throws InvalidArgument for another name (listing the names), FailedPrecondition before a
  // prompt, and for KV outputs of a generator in a batched decode or with its KV on a device.
  struct Output {
    std::string element_type;  // "float32" or "float16"
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;  // row-major, shape's product x element size bytes
  };
  Output GetOutput(std::string_view name);
  // Replaces those logits ([batch_size * vocab_size] float32, after ComputeLogits): the next
  // GenerateNextToken samples from these (penalties, logit_bias and sampling still apply).
  // Throws InvalidArgument for another size, FailedPrecondition when done or before a prompt.
  void SetLogits(std::span<const float> logits);

  // Truncates the (batch of one) sequence to `length` tokens, keeping the KV buffers.
  void RewindTo(size_t length);

  int32_t max_length() const;
  GeneratorStats Stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb
