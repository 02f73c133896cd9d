// KvPool — the memory that holds KV caches. ebb allocates it itself (mmap/munmap on CPU) so that
// ORT's arena never holds a KV cache, and destroying a generator gives the memory back.
//
// Ownership: Allocate() returns a KvBlock that owns its bytes; destroying (or Reset()) the block
// returns them to the pool. Beyond `retain_bytes`, returned memory is unmapped at once.
// Budget: when max_bytes > 0, Allocate() refuses (ResourceExhausted) a block that would take
// the bytes in use over it. A refused Allocate() changes nothing.
// Thread-safety: all methods may be called from any thread. The pool must outlive its blocks
// (the Model owns the pool; generators keep the Model alive).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "core/thread_annotations.h"
#include "ebb/stats.h"

namespace ebb::internal {

class KvPool;

// A page-aligned, zero-filled-on-first-map region of KV memory. Move-only.
class KvBlock {
 public:
  KvBlock() = default;
  KvBlock(KvBlock&& other) noexcept { *this = std::move(other); }
  KvBlock& operator=(KvBlock&& other) noexcept;
  KvBlock(const KvBlock&) = delete;
  KvBlock& operator=(const KvBlock&) = delete;
  ~KvBlock() { Reset(); }

  void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }
  // Returns the memory to the pool now.
  void Reset();

 private:
  friend class KvPool;
  KvBlock(KvPool* pool, void* data, uint64_t bytes) : pool_(pool), data_(data), bytes_(bytes) {}
  KvPool* pool_ = nullptr;  // non-owning
  void* data_ = nullptr;
  uint64_t bytes_ = 0;
};

// KV bytes charged to the pool (its budget, in-use figures and the admission hook) without
// memory from it: KV that lives in memory another owner maps (a DecodeBatcher's row slots).
// Destroying (or Reset()) returns the charge. Move-only.
class KvCharge {
 public:
  KvCharge() = default;
  KvCharge(KvCharge&& other) noexcept { *this = std::move(other); }
  KvCharge& operator=(KvCharge&& other) noexcept;
  KvCharge(const KvCharge&) = delete;
  KvCharge& operator=(const KvCharge&) = delete;
  ~KvCharge() { Reset(); }

  uint64_t bytes() const { return bytes_; }
  void Reset();

 private:
  friend class KvPool;
  KvCharge(KvPool* pool, uint64_t bytes) : pool_(pool), bytes_(bytes) {}
  KvPool* pool_ = nullptr;  // non-owning
  uint64_t bytes_ = 0;
};

class KvPool {
 public:
  // Admission hook: called with the bytes about to be added to in-use; throws to refuse
  // (used for the runtime-wide memory.limit). Called without the pool's lock held.
  // `may_reclaim`: the hook may first make room by dropping prefix caches (false for a prefix
  // cache's own blocks: caches never evict one another to grow).
  using AdmitFn = std::function<void(uint64_t bytes, bool may_reclaim)>;
  // Called (without the pool's lock) when the pool's own budget would refuse `bytes`: drops what
  // the model's prefix cache holds, least recently used first, and returns the bytes freed.
  using ReclaimFn = std::function<uint64_t(uint64_t bytes)>;
  // Called with bytes that leave "in use" (a block returned, or an admitted allocation that
  // failed), so the admission hook's accounting stays exact.
  using ReleaseFn = std::function<void(uint64_t bytes)>;

  KvPool(uint64_t max_bytes, uint64_t retain_bytes);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  // Allocates `bytes` (rounded up to the page size). Throws ebb::Error(ResourceExhausted) naming
  // the bytes needed, in use and allowed, and the option to change, when over budget or when
  // the OS refuses the mapping. `what` describes the request for the message.
  // Before refusing for kv_cache.max_bytes it asks the reclaim hook for room (`may_reclaim`).
  KvBlock Allocate(uint64_t bytes, const char* what = "KV cache", bool may_reclaim = true);
  // Charges `bytes` (rounded up to the page size) as in use without mapping anything: the same
  // budget and admission checks and errors as Allocate(), nothing charged on failure.
  KvCharge Charge(uint64_t bytes, const char* what = "KV cache");

  // Unmaps every retained region (trim). Returns the bytes given back to the OS.
  uint64_t Trim();

  // Every field of KvStats (ebb/stats.h), read under the pool's lock.
  KvStats Stats() const;
  void set_admit_fn(AdmitFn fn, ReleaseFn release);
  void set_reclaim_fn(ReclaimFn fn);

 private:
  friend class KvBlock;
  friend class KvCharge;
  // Budget check, charge and admission hook; throws with nothing charged. Returns the hook
  // that undoes the admission (to call when a later step fails).
  ReleaseFn Admit(uint64_t size, const char* what, bool may_reclaim);
  void Release(void* data, uint64_t bytes) noexcept;
  void Uncharge(uint64_t bytes) noexcept;

  mutable Mutex mu_;
  uint64_t max_bytes_ EBB_GUARDED_BY(mu_);
  uint64_t retain_bytes_ EBB_GUARDED_BY(mu_);
  AdmitFn admit_ EBB_GUARDED_BY(mu_);
  ReleaseFn release_ EBB_GUARDED_BY(mu_);
  ReclaimFn reclaim_ EBB_GUARDED_BY(mu_);
  KvStats stats_ EBB_GUARDED_BY(mu_);
  // Retained regions by size (bytes -> address), reused best-fit.
  std::multimap<uint64_t, void*> retained_ EBB_GUARDED_BY(mu_);
};

}  // namespace ebb::internal
