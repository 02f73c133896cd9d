#include "model/constraint_cache.h"

#include "ebb/error.h"
#include "tokenizer/token_bytes.h"

namespace ebb::internal {

ConstraintCache::ConstraintCache(const Tokenizer* tokenizer, uint64_t max_bytes)
    : tokenizer_(tokenizer), max_bytes_(max_bytes) {}

std::shared_ptr<const constrain::TokenTrie> ConstraintCache::Trie() {
  {
    MutexLock lock(mu_);
    if (trie_) return trie_;
  }
  if (tokenizer_ == nullptr) {
    throw Error(ErrorCode::FailedPrecondition,
                "json_schema, regex and grammar need the model's tokenizer.json (the constraint "
                "is on text; the folder has none)");
  }
  TokenBytes tb = ComputeTokenBytes(*tokenizer_);
  auto trie =
      std::make_shared<const constrain::TokenTrie>(std::move(tb.bytes), std::move(tb.special));
  MutexLock lock(mu_);
  if (!trie_) trie_ = std::move(trie);
  return trie_;
}

std::shared_ptr<const constrain::CompiledConstraint> ConstraintCache::Get(
    const constrain::ConstraintSpec& spec) {
  const std::string key = spec.Key();
  {
    MutexLock lock(mu_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      // Its masks grew since it was stored: count what it holds now.
      const uint64_t now = it->second.constraint->MemoryBytes();
      bytes_ += now - it->second.bytes;
      it->second.bytes = now;
      auto c = it->second.constraint;
      EvictLocked();
      return c;
    }
    ++misses_;
  }
  std::shared_ptr<const constrain::CompiledConstraint> c =
      constrain::CompiledConstraint::Compile(spec, Trie());
  MutexLock lock(mu_);
  if (max_bytes_ == 0 || entries_.count(key)) return c;
  lru_.push_front(key);
  Entry e{c, lru_.begin(), c->MemoryBytes()};
  bytes_ += e.bytes;
  entries_.emplace(key, std::move(e));
  EvictLocked();
  return c;
}

void ConstraintCache::EvictLocked() {
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    const auto it = entries_.find(lru_.back());
    bytes_ -= it->second.bytes;
    entries_.erase(it);
    lru_.pop_back();
    ++evicted_;
  }
}

ConstraintCacheStats ConstraintCache::Stats() const {
  MutexLock lock(mu_);
  ConstraintCacheStats s;
  s.max_bytes = max_bytes_;
  s.entries = entries_.size();
  // Entries' masks grow while generators use them: re-measure.
  for (const auto& [key, e] : entries_) s.bytes += e.constraint->MemoryBytes();
  s.vocabulary_bytes = trie_ ? trie_->MemoryBytes() : 0;
  s.hits = hits_;
  s.misses = misses_;
  s.evicted = evicted_;
  return s;
}

void ConstraintCache::Clear() {
  MutexLock lock(mu_);
  entries_.clear();
  lru_.clear();
  bytes_ = 0;
}

}  // namespace ebb::internal
