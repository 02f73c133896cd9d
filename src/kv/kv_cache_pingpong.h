// KvCachePingPong — the ping-pong layout (kv_cache.h): for graphs that concatenate (and GQA
// graphs without a shared buffer) the past [B, H, P, D] is in one pool buffer and ORT writes the
// present [B, H, P+S, D] (GQA: as wide as the attention mask) into the other; they swap after
// each step. The past is compact ([.., width, ..] per tensor), so its layout does not depend on
// the capacity. A multi-step prefill after a non-empty past keeps a copy of that past
// (BeginSteps) so that a failed later step can restore it (UndoSteps). Static mode reserves
// max_length for both buffers at construction; dynamic mode grows them in chunks.
// Not thread-safe: owned by one generator.
#pragma once

#include "kv/kv_cache.h"

namespace ebb::internal {

class KvCachePingPong final : public KvCache {
 public:
  // Static mode allocates now and may throw ResourceExhausted.
  KvCachePingPong(KvPool& pool, const KvShape& shape, KvMode mode, int max_length,
                  int chunk_tokens);

  void Reserve(int total_tokens) override;
  void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                std::vector<Ort::Value>& past_values,
                std::vector<Ort::Value>& present_values) override;
  void CommitStep() override;
  void BeginSteps(int width, int steps) override;
  void UndoSteps(int steps) override;
  void EndSteps() override { saved_.Reset(); }
  int Rewind(int width, int new_width) override;
  uint64_t bytes() const override { return a_.bytes() + b_.bytes() + saved_.bytes(); }

 protected:
  char* PositionZero(int width, int tensor, int row, int head, bool for_write) override;

 private:
  // Copies the first `width` tokens of each tensor between a buffer of `src_cap` tokens
  // (tensors at capacity-strided slots) and one of `dst_cap`.
  void CopyPast(const char* src, int src_cap, char* dst, int dst_cap, int width) const;

  KvBlock a_, b_;  // a_ holds the past, b_ receives the present
  int cap_a_ = 0, cap_b_ = 0;
  // BeginSteps' copy of the committed past, compact ([.., saved_width_, ..] per tensor).
  KvBlock saved_;
  int saved_width_ = 0;
};

}  // namespace ebb::internal
