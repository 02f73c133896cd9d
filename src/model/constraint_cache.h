// model/constraint_cache.h — a model's compiled output constraints (json_schema, regex,
// grammar), kept for reuse and counted in its memory stats.
//
// Compiling a schema and, above all, the per-position token masks it learns as generations run
// (constrain/constraint.h) cost milliseconds each; a service that answers the same schema many
// times keeps them here, keyed by the constraint's kind, trigger and text. The cache holds at
// most constraint_cache.max_bytes (ConstraintCacheStats::bytes counts each entry's grammar and
// masks, re-measured when it is used) and drops the least recently used entries beyond it; an
// entry in use by a generator stays alive through the generator's shared_ptr, so eviction
// never breaks a running request. The vocabulary's token bytes and trie are built at the first
// constrained request and shared by every entry.
//
// Thread-safety: every method may be called from any thread (one mutex; compilation runs
// outside it, so a slow compile blocks no other request).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/constraint.h"
#include "core/thread_annotations.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"

namespace ebb::internal {

class ConstraintCache {
 public:
  // `tokenizer` (not owned; null when the model has none) must outlive the cache.
  ConstraintCache(const Tokenizer* tokenizer, uint64_t max_bytes);

  // The compiled constraint for `spec`, from the cache or compiled now. Throws
  // ebb::Error(InvalidArgument) for a spec that does not compile, and FailedPrecondition when
  // the model has no tokenizer.json (masks need the vocabulary's bytes).
  std::shared_ptr<const constrain::CompiledConstraint> Get(const constrain::ConstraintSpec& spec)
      EBB_EXCLUDES(mu_);
  // The vocabulary trie (built on first use).
  std::shared_ptr<const constrain::TokenTrie> Trie() EBB_EXCLUDES(mu_);

  ConstraintCacheStats Stats() const EBB_EXCLUDES(mu_);
  void Clear() EBB_EXCLUDES(mu_);

 private:
  struct Entry {
    std::shared_ptr<const constrain::CompiledConstraint> constraint;
    std::list<std::string>::iterator lru;
    uint64_t bytes = 0;
  };
  void EvictLocked() EBB_REQUIRES(mu_);

  const Tokenizer* tokenizer_;
  const uint64_t max_bytes_;
  mutable Mutex mu_;
  std::shared_ptr<const constrain::TokenTrie> trie_ EBB_GUARDED_BY(mu_);
  std::unordered_map<std::string, Entry> entries_ EBB_GUARDED_BY(mu_);
  std::list<std::string> lru_ EBB_GUARDED_BY(mu_);  // most recent first
  uint64_t bytes_ EBB_GUARDED_BY(mu_) = 0;
  uint64_t hits_ EBB_GUARDED_BY(mu_) = 0;
  uint64_t misses_ EBB_GUARDED_BY(mu_) = 0;
  uint64_t evicted_ EBB_GUARDED_BY(mu_) = 0;
};

}  // namespace ebb::internal
