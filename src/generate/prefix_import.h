// A generator's traffic with its model's prefix cache (kv/prefix_cache.h): importing the longest
// cached prefix of a one-row prompt into an empty KV cache, and storing the whole blocks of each
// row's held tokens after a prefill. Generator::Impl calls these; they touch only the caches
// and, for a batched-decode row, take its batcher's engine lock as a step would.
// Thread-safety: as the generator (one thread at a time); the caches lock themselves.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "generate/decode_batcher.h"
#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"

namespace ebb::internal {

// Where a generator's KV lives when it is a batched-decode row (null batcher: its own cache).
struct BatchedRow {
  DecodeBatcher* batcher = nullptr;
  int row = -1;
};

// Copies the cache's longest match for `prompt` (leaving at least one token to prefill: its
// logits are needed) into the empty `kv` as the past, and returns the tokens reused (0: none).
// `count_hit`: count the lookup in the cache's hit figures (a user request, not ebb's own).
// May throw ResourceExhausted from KvCache::Reserve, with nothing changed.
int ImportPrefix(PrefixCache& cache, KvCache& kv, BatchedRow where,
                 const std::vector<int32_t>& prompt, bool count_hit);

// One row of the KV to store: its tokens, how many the KV holds, and whether its positions are
// its tokens' (a left-padded row is not).
struct StoredRow {
  const std::vector<int32_t>* tokens = nullptr;
  int held = 0;
  bool aligned = true;
};

// Stores each aligned row's whole blocks the cache does not have yet, read from `kv` of `width`
// columns. Never throws: a store that does not fit stores less, a failure is logged naming
// `model_id`.
void StorePrefixes(PrefixCache& cache, KvCache& kv, BatchedRow where, int width,
                   const std::vector<StoredRow>& rows, const std::string& model_id) noexcept;

}  // namespace ebb::internal
