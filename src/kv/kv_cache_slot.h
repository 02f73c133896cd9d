// KvCacheSlot — the slot layout (kv_cache.h): a batch-1 shared past/present buffer in a
// DecodeBatcher row, memory the batcher maps. The cache binds the row where `slot` says it is
// now, and charges the model's KvPool for its tokens exactly as KvCacheShared would allocate
// them (static: max_length at construction; dynamic: in chunks), with the same budgets and
// errors; a bigger charge is taken before the old one is returned, so a refusal changes
// nothing. Commit, rollback and rewind need nothing (rows are read up to their lengths).
// Not thread-safe: owned by one generator; BindStep runs under the batcher's engine lock.
#pragma once

#include <functional>

#include "kv/kv_cache.h"

namespace ebb::internal {

class KvCacheSlot final : public KvCache {
 public:
  // Throws Internal unless `slot` is set and the shape is batch 1, K and V (not combined);
  // static mode charges now and may throw ResourceExhausted.
  KvCacheSlot(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens,
              std::function<KvSlotView()> slot);

  void Reserve(int total_tokens) override;
  void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                std::vector<Ort::Value>& past_values,
                std::vector<Ort::Value>& present_values) override;
  uint64_t bytes() const override { return charge_.bytes(); }

 protected:
  char* PositionZero(int width, int tensor, int row, int head, bool for_write) override;

 private:
  std::function<KvSlotView()> slot_;
  KvCharge charge_;  // for cap_ tokens
  int cap_ = 0;
};

}  // namespace ebb::internal
