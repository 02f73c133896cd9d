// KvCacheShared — the shared layout (kv_cache.h): GQA graphs with
// search.past_present_share_buffer bind past and present to the SAME pool buffer of `capacity`
// tokens per row, [B, H, capacity, D] per layer and K/V; ORT appends in place, reading each
// row's valid prefix (seqlens_k). Static mode reserves max_length at construction and lays out
// (and binds) only as wide as the steps so far need (64-token steps, re-laid in place 1.5x
// wider); dynamic mode copies into a larger buffer when a step needs more. Commit, rollback and
// rewind need nothing: a step only writes beyond the rows' committed lengths.
// Not thread-safe: owned by one generator.
#pragma once

#include "kv/kv_cache.h"

namespace ebb::internal {

class KvCacheShared final : public KvCache {
 public:
  // Static mode allocates now and may throw ResourceExhausted.
  KvCacheShared(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens);

  void Reserve(int total_tokens) override;
  void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                std::vector<Ort::Value>& past_values,
                std::vector<Ort::Value>& present_values) override;
  uint64_t bytes() const override { return buf_.bytes(); }

 protected:
  char* PositionZero(int width, int tensor, int row, int head, bool for_write) override;

 private:
  // Static mode: widens the layout to at least `tokens` (in place; no allocation).
  void EnsureWidth(int tokens);

  KvBlock buf_;
  int cap_ = 0;    // tokens per row the buffer has room for
  int width_ = 0;  // static mode: tokens per row of the current layout (<= cap_)
};

}  // namespace ebb::internal
