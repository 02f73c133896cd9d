// PrefixCache — one model's cache of KV for token prefixes, reused across requests
// (docs/memory.md "Prefix cache"; prefix_cache.max_bytes).
//
// Layout: a tree of blocks of kBlockTokens tokens each. A block is keyed by its parent block and
// its own tokens, so a prefix shared by many prompts (a RAG system prompt) is held once, and a
// prompt matches block by block from its first token (longest match). A block holds the KV of its
// tokens for every layer in a compact layout, [tensor (layer-major, K then V)][head][token][dim],
// kBlockTokens * KvShape::BytesPerToken() bytes, in memory from the model's KvPool: the cache is
// charged to kv_cache.max_bytes and memory.limit like any KV.
// Ownership and concurrency: a Match holds shared references to its blocks, so a block that is
// evicted while a request copies from it stays valid until that request lets go of it (its bytes
// stay charged until then). Blocks are never modified after they are stored. All methods are
// thread-safe; the KV copies in and out run without the cache's lock.
// Eviction: least recently used blocks without children (leaves) go first; pinned blocks and
// blocks a Store is extending are never evicted.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/thread_annotations.h"
#include "ebb/stats.h"
#include "kv/kv_pool.h"

namespace ebb::internal {

class PrefixCache {
 public:
  // Tokens per block: the granularity of a match. 16 keeps what a chat turn must recompute
  // small (at most 15 tokens of the previous turn) while a 1,024-token prefix is only 64 blocks.
  static constexpr int kBlockTokens = 16;

  struct Block {
    uint64_t id = 0;
    KvBlock memory;  // kBlockTokens tokens of KV, compact (see above)
  };
  // The blocks of a lookup, in order from the first token; holds them alive.
  struct Match {
    std::vector<std::shared_ptr<const Block>> blocks;
    int tokens() const { return static_cast<int>(blocks.size()) * kBlockTokens; }
  };
  // Copies `kBlockTokens` positions of KV starting at `start` into `dst` (the compact layout).
  using ReadFn = std::function<void(int start, char* dst)>;

  // `token_bytes`: KvShape::BytesPerToken() of the model (batch 1).
  PrefixCache(KvPool& pool, uint64_t token_bytes, uint64_t max_bytes);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const;
  // The longest stored prefix of `tokens` of at most `max_tokens` tokens (whole blocks). A
  // request counts as a hit or a miss (`count`); its blocks become the most recently used.
  Match Lookup(std::span<const int32_t> tokens, int max_tokens, bool count = true);
  // Stores the whole blocks of tokens[0, n) that are not stored yet, reading their KV with
  // `read`, as far as prefix_cache.max_bytes allows after evicting older blocks and as the pool
  // admits (it never evicts other caches for this: a store that does not fit stores less).
  // Never throws for lack of room; `read` is called without the cache's lock.
  void Store(std::span<const int32_t> tokens, int n, const ReadFn& read);

  // Keeps the stored whole blocks of `tokens` until UnpinPrefix (not evicted, not dropped by
  // shrinks or memory pressure). Returns the tokens pinned (0 when the first block is not
  // stored). Pinning the same tokens twice pins once. `added` (may be null): set to whether
  // this call pinned them (false when that prefix was pinned already, or nothing was stored), so
  // that a caller undoing a short pin never unpins an earlier one.
  int Pin(std::span<const int32_t> tokens, bool* added = nullptr);
  // Returns false when `tokens` were not pinned.
  bool Unpin(std::span<const int32_t> tokens);
  // Drops unpinned blocks, least recently used first, until `want` bytes were freed (UINT64_MAX:
  // all). Returns the bytes freed (blocks a request still copies from are freed when it is done).
  // `reclaim`: counted as reclaimed (memory pressure, shrink, release) rather than evicted.
  uint64_t Drop(uint64_t want, bool reclaim = true);
  // Drops every block, pinned ones too, and forgets the pins (the model is being unloaded).
  void Clear();
  // Tier 2: a lower budget evicts at once; 0 turns the cache off (unpinned blocks dropped).
  void SetMaxBytes(uint64_t bytes);
  PrefixCacheStats Stats() const;

 private:
  struct Key {
    uint64_t parent;
    std::array<int32_t, kBlockTokens> tokens;
    bool operator==(const Key& o) const { return parent == o.parent && tokens == o.tokens; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Node {
    Key key;
    std::shared_ptr<Block> block;
    int children = 0;
    int pins = 0;
    int users = 0;  // Stores extending this node
    uint64_t tick = 0;
  };

  static Key MakeKey(uint64_t parent, std::span<const int32_t> tokens, int block);
  bool Evictable(const Node& n) const { return n.children == 0 && n.pins == 0 && n.users == 0; }
  // Marks `id` used now (re-sorted in the LRU order).
  void Touch(Node& n) EBB_REQUIRES(mu_);
  void Reindex(Node& n) EBB_REQUIRES(mu_);
  // Evicts the least recently used evictable block; false when there is none.
  bool EvictOne(bool reclaim) EBB_REQUIRES(mu_);
  // The chain of stored blocks matching tokens[0, max_tokens), as node ids.
  std::vector<uint64_t> Walk(std::span<const int32_t> tokens, int max_tokens) const
      EBB_REQUIRES(mu_);

  KvPool& pool_;  // non-owning: the model's pool outlives the cache
  const uint64_t block_bytes_;
  mutable Mutex mu_;
  uint64_t max_bytes_ EBB_GUARDED_BY(mu_);
  uint64_t bytes_ EBB_GUARDED_BY(mu_) = 0;  // stored blocks plus blocks being stored
  uint64_t next_id_ EBB_GUARDED_BY(mu_) = 1;
  uint64_t clock_ EBB_GUARDED_BY(mu_) = 0;
  std::unordered_map<uint64_t, Node> nodes_ EBB_GUARDED_BY(mu_);
  std::unordered_map<Key, uint64_t, KeyHash> index_ EBB_GUARDED_BY(mu_);
  std::set<std::pair<uint64_t, uint64_t>> lru_ EBB_GUARDED_BY(mu_);  // (tick, id) of evictable
  std::set<std::vector<int32_t>> pinned_ EBB_GUARDED_BY(mu_);        // the pinned prefixes
  uint64_t pinned_blocks_ EBB_GUARDED_BY(mu_) = 0;                   // nodes with pins > 0
  PrefixCacheStats stats_ EBB_GUARDED_BY(mu_);
};

}  // namespace ebb::internal
