#include "generate/prefix_import.h"

#include <exception>
#include <mutex>

#include "core/log.h"

namespace ebb::internal {

int ImportPrefix(PrefixCache& cache, KvCache& kv, BatchedRow where,
                 const std::vector<int32_t>& prompt, bool count_hit) {
  if (prompt.size() < 2) return 0;
  const PrefixCache::Match match =
      cache.Lookup(prompt, static_cast<int>(prompt.size()) - 1, count_hit);
  const int n = match.tokens();
  if (n == 0) return 0;
  kv.Reserve(static_cast<int>(prompt.size()));
  constexpr int kBlock = PrefixCache::kBlockTokens;
  const auto write = [&] {
    for (size_t i = 0; i < match.blocks.size(); ++i) {
      kv.WritePositions(n, 0, static_cast<int>(i) * kBlock, kBlock,
                        static_cast<const char*>(match.blocks[i]->memory.data()));
    }
  };
  if (where.batcher != nullptr) {
    // The row is the batcher's memory: written under its engine lock, as a step would.
    std::unique_lock<std::mutex> engine = where.batcher->LockEngine();
    where.batcher->EnsureColumns(n);
    write();
    where.batcher->NoteWritten(where.row, n);
  } else {
    write();
  }
  return n;
}

void StorePrefixes(PrefixCache& cache, KvCache& kv, BatchedRow where, int width,
                   const std::vector<StoredRow>& rows, const std::string& model_id) noexcept {
  // Off (prefix_cache.max_bytes=0): no store, and no batcher engine lock taken for nothing.
  if (!cache.enabled()) return;
  const auto store = [&] {
    for (size_t b = 0; b < rows.size(); ++b) {
      if (!rows[b].aligned) continue;
      cache.Store(*rows[b].tokens, rows[b].held, [&](int start, char* dst) {
        kv.ReadPositions(width, static_cast<int>(b), start, PrefixCache::kBlockTokens, dst);
      });
    }
  };
  try {
    if (where.batcher != nullptr) {
      std::unique_lock<std::mutex> engine = where.batcher->LockEngine();
      store();
    } else {
      store();
    }
  } catch (const std::exception& e) {
    EBB_LOG_WARN("prefix cache: storing '{}' failed: {}", model_id, e.what());
  }
}

}  // namespace ebb::internal
