// The `naive-ort` baseline of `ebb bench`: the decode loop people write by hand against the ORT
// C++ API. The session (built with the same session options ebb would use, from the model's
// genai_config.json and the user's --session-option flags) lives for the run; every step lets
// ORT allocate the presents (in its arena) and feeds them back as the next past, so the KV cache
// lives in ORT's arena. Greedy (argmax) decoding; stops at gen_tokens or when every row has
// produced an EOS id. Prompts: the same as the ebb run's (rag's varying lengths with
// --scenario rag, rag-prefix's prefix and questions with --scenario rag-prefix, the fixed prompt
// otherwise); it has no prefix cache.
// Supports builder-style graphs with separate `past_key_values.%d.key/value` (GQA) and gpt2-style
// combined `past_%d` ([2, batch, heads, seq, head_size]) with position_ids; input ids and masks
// may be int32 or int64, logits float32 or float16.
// Ownership: owns its session; `options` and `prompts` are borrowed and must outlive it.
#pragma once

#include <memory>
#include <string>

#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/prompts.h"

namespace ebb::bench {

class NaiveOrtWorkload final : public Workload {
 public:
  // `name`: the run spec, e.g. "naive-ort" or "naive-ort,shrink-every=5".
  NaiveOrtWorkload(std::string name, const BenchOptions& options, const PromptSet& prompts);
  ~NaiveOrtWorkload() override;

  std::string name() const override { return name_; }
  std::string engine() const override { return "naive-ort"; }
  // Session alive, fresh past every request; with --scenario rag or rag-prefix, their prompts.
  std::string scenario() const override {
    return PromptKindOf(options_.scenario) == PromptKind::kFixed ? "seed-loop" : options_.scenario;
  }
  double Setup() override;
  RequestTiming RunIteration(int32_t index) override;
  // in_use: bytes of the presents held as past (0 between requests); reserved: absent (the
  // arena holds them; see Arena()).
  KvSample Kv() const override;
  ArenaSample Arena() const override;
  void Teardown() override;

 private:
  struct State;
  std::string name_;
  const BenchOptions& options_;  // not owned
  const PromptSet& prompts_;     // not owned
  std::unique_ptr<State> state_;
};

}  // namespace ebb::bench
