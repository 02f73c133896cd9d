#include "kv/prefix_cache.h"

#include <algorithm>

#include "core/log.h"
#include "core/pages.h"
#include "ebb/error.h"

namespace ebb::internal {

size_t PrefixCache::KeyHash::operator()(const Key& k) const {
  // FNV-1a over the parent id and the tokens; collisions only cost a comparison (Key ==).
  uint64_t h = 1469598103934665603ull ^ k.parent;
  for (int32_t t : k.tokens) {
    h ^= static_cast<uint32_t>(t);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

PrefixCache::PrefixCache(KvPool& pool, uint64_t token_bytes, uint64_t max_bytes)
    : pool_(pool), block_bytes_(PageRound(token_bytes * kBlockTokens)), max_bytes_(max_bytes) {
  stats_.block_tokens = kBlockTokens;
}

PrefixCache::~PrefixCache() { Clear(); }

bool PrefixCache::enabled() const {
  MutexLock lock(mu_);
  return max_bytes_ > 0;
}

PrefixCache::Key PrefixCache::MakeKey(uint64_t parent, std::span<const int32_t> tokens, int block) {
  Key k{parent, {}};
  std::copy_n(tokens.begin() + static_cast<size_t>(block) * kBlockTokens, kBlockTokens,
              k.tokens.begin());
  return k;
}

void PrefixCache::Reindex(Node& n) {
  lru_.erase({n.tick, n.block->id});
  if (Evictable(n)) lru_.insert({n.tick, n.block->id});
}

void PrefixCache::Touch(Node& n) {
  lru_.erase({n.tick, n.block->id});
  n.tick = ++clock_;
  if (Evictable(n)) lru_.insert({n.tick, n.block->id});
}

std::vector<uint64_t> PrefixCache::Walk(std::span<const int32_t> tokens, int max_tokens) const {
  std::vector<uint64_t> chain;
  const int limit = std::min<int>(max_tokens, static_cast<int>(tokens.size()));
  uint64_t parent = 0;
  for (int b = 0; (b + 1) * kBlockTokens <= limit; ++b) {
    auto it = index_.find(MakeKey(parent, tokens, b));
    if (it == index_.end()) break;
    chain.push_back(it->second);
    parent = it->second;
  }
  return chain;
}

PrefixCache::Match PrefixCache::Lookup(std::span<const int32_t> tokens, int max_tokens,
                                       bool count) {
  Match m;
  MutexLock lock(mu_);
  if (max_bytes_ == 0 && pinned_.empty()) return m;
  for (uint64_t id : Walk(tokens, max_tokens)) {
    Node& n = nodes_.at(id);
    Touch(n);
    m.blocks.push_back(n.block);
  }
  if (count) {
    if (m.blocks.empty()) {
      ++stats_.misses;
    } else {
      ++stats_.hits;
      stats_.tokens_reused += static_cast<uint64_t>(m.tokens());
    }
  }
  return m;
}

bool PrefixCache::EvictOne(bool reclaim) {
  if (lru_.empty()) return false;
  const uint64_t id = lru_.begin()->second;
  lru_.erase(lru_.begin());
  auto it = nodes_.find(id);
  Node& n = it->second;
  if (n.key.parent != 0) {
    Node& parent = nodes_.at(n.key.parent);
    --parent.children;
    Reindex(parent);
  }
  index_.erase(n.key);
  bytes_ -= block_bytes_;
  ++(reclaim ? stats_.reclaimed_blocks : stats_.evicted_blocks);
  nodes_.erase(it);  // the block goes back to the pool unless a Match still holds it
  return true;
}

void PrefixCache::Store(std::span<const int32_t> tokens, int n, const ReadFn& read) {
  n = std::min<int>(n, static_cast<int>(tokens.size()));
  const int blocks = n / kBlockTokens;
  std::vector<uint64_t> chain;  // nodes this store extends: protected from eviction
  int first_missing = 0;
  {
    MutexLock lock(mu_);
    if (max_bytes_ == 0 || blocks == 0) return;
    chain = Walk(tokens, blocks * kBlockTokens);
    first_missing = static_cast<int>(chain.size());
    for (uint64_t id : chain) {
      Node& node = nodes_.at(id);
      ++node.users;
      Touch(node);
    }
  }
  int stored = 0;
  for (int b = first_missing; b < blocks; ++b) {
    {
      // Room under max_bytes: evict older blocks; stop when nothing more can go.
      MutexLock lock(mu_);
      while (bytes_ + block_bytes_ > max_bytes_ && EvictOne(false)) {
      }
      if (bytes_ + block_bytes_ > max_bytes_) break;
      bytes_ += block_bytes_;  // reserved, so that concurrent stores stay under max_bytes
    }
    auto block = std::make_shared<Block>();
    try {
      // Never reclaims: caches do not evict one another (or themselves) to grow.
      block->memory = pool_.Allocate(block_bytes_, "prefix cache block", /*may_reclaim=*/false);
      read(b * kBlockTokens, static_cast<char*>(block->memory.data()));
    } catch (const Error& e) {
      EBB_LOG_DEBUG("prefix cache: stopped storing at token {}: {}", b * kBlockTokens, e.what());
      MutexLock lock(mu_);
      bytes_ -= block_bytes_;
      break;
    }
    MutexLock lock(mu_);
    const uint64_t parent = chain.empty() ? 0 : chain.back();
    if (parent != 0 && nodes_.count(parent) == 0) {  // cannot happen: users > 0 protects it
      bytes_ -= block_bytes_;
      break;
    }
    const Key key = MakeKey(parent, tokens, b);
    if (auto it = index_.find(key); it != index_.end()) {
      // A concurrent store of the same tokens got there first: use its block.
      bytes_ -= block_bytes_;
      Node& existing = nodes_.at(it->second);
      ++existing.users;
      Touch(existing);
      chain.push_back(it->second);
      continue;
    }
    block->id = next_id_++;
    Node node;
    node.key = key;
    node.block = std::move(block);
    node.users = 1;
    node.tick = ++clock_;
    const uint64_t id = node.block->id;
    nodes_.emplace(id, std::move(node));
    index_.emplace(key, id);
    if (parent != 0) {
      Node& p = nodes_.at(parent);
      ++p.children;
      Reindex(p);
    }
    chain.push_back(id);
    ++stored;
  }
  MutexLock lock(mu_);
  stats_.tokens_stored += static_cast<uint64_t>(stored) * kBlockTokens;
  for (uint64_t id : chain) {
    auto it = nodes_.find(id);
    if (it == nodes_.end()) continue;
    --it->second.users;
    Reindex(it->second);
  }
}

int PrefixCache::Pin(std::span<const int32_t> tokens, bool* added) {
  MutexLock lock(mu_);
  if (added != nullptr) *added = false;
  const std::vector<uint64_t> chain = Walk(tokens, static_cast<int>(tokens.size()));
  if (chain.empty()) return 0;
  const int n = static_cast<int>(chain.size()) * kBlockTokens;
  std::vector<int32_t> key(tokens.begin(), tokens.begin() + n);
  if (!pinned_.insert(key).second) return n;
  if (added != nullptr) *added = true;
  for (uint64_t id : chain) {
    Node& node = nodes_.at(id);
    if (node.pins++ == 0) ++pinned_blocks_;
    Reindex(node);
  }
  return n;
}

bool PrefixCache::Unpin(std::span<const int32_t> tokens) {
  MutexLock lock(mu_);
  const int n = static_cast<int>(tokens.size()) / kBlockTokens * kBlockTokens;
  auto it = pinned_.find(std::vector<int32_t>(tokens.begin(), tokens.begin() + n));
  if (it == pinned_.end()) return false;
  const std::vector<int32_t> key = *it;
  pinned_.erase(it);
  for (uint64_t id : Walk(key, n)) {
    Node& node = nodes_.at(id);
    if (--node.pins == 0) --pinned_blocks_;
    Reindex(node);
  }
  if (max_bytes_ == 0) {
    while (EvictOne(true)) {
    }
  }
  return true;
}

uint64_t PrefixCache::Drop(uint64_t want, bool reclaim) {
  MutexLock lock(mu_);
  uint64_t freed = 0;
  while (freed < want && EvictOne(reclaim)) freed += block_bytes_;
  return freed;
}

void PrefixCache::Clear() {
  MutexLock lock(mu_);
  pinned_.clear();
  pinned_blocks_ = 0;
  lru_.clear();
  index_.clear();
  nodes_.clear();  // blocks go back to the pool (a Match still held keeps its blocks)
  bytes_ = 0;
}

void PrefixCache::SetMaxBytes(uint64_t bytes) {
  MutexLock lock(mu_);
  max_bytes_ = bytes;
  // Pinned blocks stay even over a lowered budget: they go when they are unpinned.
  while (bytes_ > max_bytes_ && EvictOne(false)) {
  }
}

PrefixCacheStats PrefixCache::Stats() const {
  MutexLock lock(mu_);
  PrefixCacheStats s = stats_;
  s.max_bytes = max_bytes_;
  s.blocks = nodes_.size();
  s.bytes = static_cast<uint64_t>(nodes_.size()) * block_bytes_;
  s.pinned_bytes = pinned_blocks_ * block_bytes_;
  return s;
}

}  // namespace ebb::internal
