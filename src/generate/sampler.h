// Sampler — picks the next token from one row's logits: greedy, or temperature + top-k + top-p
// sampling. Before either, the logits are adjusted: the repetition penalty (HF), then OpenAI's
// presence and frequency penalties over the tokens this sampler chose, then logit_bias. Greedy
// takes the argmax of the adjusted logits. Seeded: the same seed gives the same tokens.
//
// Cost: O(vocab) per token; no full sort (top-k uses selection; top-p sorts only a growing
// candidate prefix). The penalties add O(distinct tokens sampled), logit_bias O(its entries),
// logprobs one more pass over the vocabulary (a log-sum-exp and a top-N heap). Nothing is
// allocated per token once the scratch buffers have grown (the penalties' per-id counts, one
// int32 per vocabulary id, are allocated at the first token that needs them).
// Not thread-safe: one sampler per generator row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "ebb/generator.h"

namespace ebb::internal {

// Restricts the tokens a row may take (a structured-output constraint, generator.cpp). The
// sampler asks it after the penalties and logit_bias: greedy decoding checks only the argmax
// (Allows) and masks the vocabulary only when the argmax is refused, which picks the same token
// as masking first; sampling and logprobs always mask (Mask).
class TokenFilter {
 public:
  virtual ~TokenFilter() = default;
  virtual bool Allows(int32_t token) = 0;
  // Sets the logit of every token it does not allow to -inf. Returns false when it allows none.
  virtual bool Mask(std::span<float> logits) = 0;
};

struct SamplerConfig {
  bool do_sample = false;
  int32_t top_k = 0;   // 0: off
  float top_p = 1.0f;  // 1: off
  float temperature = 1.0f;
  float repetition_penalty = 1.0f;
  // OpenAI semantics: logit[t] -= frequency_penalty * count[t] + presence_penalty * (count[t] >
  // 0), where count[t] is how often this sampler chose t (tokens forgotten by Truncate excluded).
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // (token id, bias) added to the logit; ids are below the vocabulary size (the generator checks).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // -1: no logprobs; 0 to 20: each sample also computes the chosen token's log-probability and
  // this many most likely tokens (last_logprobs()).
  int32_t top_logprobs = -1;
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);

  // `logits` is modified in place (penalties, bias). `history` are the row's tokens so far
  // (prompt and generated), used by the repetition penalty; the token returned is recorded as
  // sampled at position history.size() for the presence and frequency penalties. Returns a
  // token id in [0, logits.size()), one `filter` (when given) allows; -1 when the filter allows
  // none (nothing is recorded then).
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history,
                 TokenFilter* filter = nullptr);

  // Forgets the tokens sampled at positions >= `length` (Generator::RewindTo): they no longer
  // count for the presence and frequency penalties.
  void Truncate(size_t length);

  // The last Sample's token and log-probabilities (log-softmax of the adjusted logits, before
  // temperature, top_k and top_p). Valid when config.top_logprobs >= 0 and a token was sampled.
  const TokenLogprobs& last_logprobs() const { return last_; }

 private:
  void Adjust(std::span<float> logits, std::span<const int32_t> history);
  bool Greedy() const;
  int32_t Choose(std::span<float> logits);
  void Record(int32_t token, size_t position, size_t vocab);
  void ComputeLogprobs(std::span<const float> logits, int32_t chosen);

  SamplerConfig config_;
  bool penalized_ = false;  // presence or frequency penalty set
  std::mt19937_64 rng_;
  std::vector<int32_t> candidates_;              // reused across calls
  std::vector<std::pair<float, int32_t>> heap_;  // top-k / top-logprobs selection scratch
  std::vector<uint8_t> seen_;                    // repetition-penalty marks, reused
  std::vector<int32_t> counts_;    // per vocabulary id: times sampled (penalties; lazily sized)
  std::vector<int32_t> distinct_;  // ids with counts_ > 0
  std::vector<std::pair<size_t, int32_t>> sampled_;  // (position, id) of sampled tokens
  TokenLogprobs last_;
};

// Index of the largest value (first on ties).
int32_t ArgMax(std::span<const float> values);

}  // namespace ebb::internal
