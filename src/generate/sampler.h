// Sampler — picks the next token from one row's logits: greedy, or temperature + top-k + top-p
// sampling, with an optional repetition penalty. Seeded: the same seed gives the same tokens.
//
// Cost: O(vocab) per token; no full sort (top-k uses selection; top-p sorts only a growing
// candidate prefix). Not thread-safe: one sampler per generator.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace ebb::internal {

struct SamplerConfig {
  bool do_sample = false;
  int32_t top_k = 0;   // 0: off
  float top_p = 1.0f;  // 1: off
  float temperature = 1.0f;
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);

  // `logits` is modified in place (penalty, temperature). `history` are the row's tokens so far,
  // used by the repetition penalty. Returns a token id in [0, logits.size()).
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history);

 private:
  SamplerConfig config_;
  std::mt19937_64 rng_;
  std::vector<int32_t> candidates_;              // reused across calls
  std::vector<std::pair<float, int32_t>> heap_;  // top-k selection scratch, reused
  std::vector<uint8_t> seen_;                    // repetition-penalty marks, reused
};

// Index of the largest value (first on ties).
int32_t ArgMax(std::span<const float> values);

}  // namespace ebb::internal
