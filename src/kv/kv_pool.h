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

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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

// Device memory for a KvPool whose KV lives on an accelerator (kv/kv_device_memory.h implements
// it over the session's ORT allocator for the device). Alloc returns an opaque handle: a
// WGPUBuffer on WebGPU, a device pointer on CUDA; a KV tensor is only ever a whole allocation
// (WebGPU handles take no offsets). Thread-safety: Alloc and Free may be called from any thread.
class KvDeviceMemory {
 public:
  virtual ~KvDeviceMemory() = default;
  // Throws ebb::Error(ResourceExhausted) naming the device when the allocation fails.
  virtual void* Alloc(uint64_t bytes) = 0;
  virtual void Free(void* handle) noexcept = 0;
  // ORT's memory info of the device, for tensors over Alloc's handles.
  virtual const Ort::MemoryInfo& memory_info() const = 0;
  // "webgpu:0", for messages.
  virtual std::string name() const = 0;
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

  // `device`: the KV lives on that device (null: host memory, mmap'd). A device pool keeps freed
  // blocks up to `retain_bytes` itself and reuses them for requests of the same size.
  KvPool(uint64_t max_bytes, uint64_t retain_bytes,
         std::unique_ptr<KvDeviceMemory> device = nullptr);
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

  // Unmaps every retained region (trim); on a device, frees the retained device buffers. Returns
  // the bytes given back.
  uint64_t Trim();

  // While set, nothing freed is retained and what is retained now is freed (ShrinkController:
  // ORT's shrink-every-Run key naming a WebGPU device). Thread-safe.
  void set_keep_nothing(bool on);

  // A device pool: the device (null on the host). Its handles are valid while their blocks are.
  KvDeviceMemory* device() const { return device_.get(); }
  // The device budget (a device pool only): `fixed_bytes` (the weights on the device) plus the
  // KV in use and retained may not exceed `limit_bytes`; over it, retained blocks are freed, then
  // Allocate refuses with ResourceExhausted naming `option` (e.g.
  // provider_options.webgpu.gpu_mem_limit). 0 = none. Set at load, before any allocation.
  void set_device_budget(uint64_t limit_bytes, uint64_t fixed_bytes, std::string option);

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
  // Rounds a request to the pool's unit: a page on the host, 256 bytes on a device.
  uint64_t RoundSize(uint64_t bytes) const;
  // Frees every retained region (outside the lock).
  void FreeRegions(const std::multimap<uint64_t, void*>& regions) noexcept;
  void Release(void* data, uint64_t bytes) noexcept;
  void Uncharge(uint64_t bytes) noexcept;

  mutable Mutex mu_;
  uint64_t max_bytes_ EBB_GUARDED_BY(mu_);
  uint64_t retain_bytes_ EBB_GUARDED_BY(mu_);
  bool keep_nothing_ EBB_GUARDED_BY(mu_) = false;
  AdmitFn admit_ EBB_GUARDED_BY(mu_);
  ReleaseFn release_ EBB_GUARDED_BY(mu_);
  ReclaimFn reclaim_ EBB_GUARDED_BY(mu_);
  KvStats stats_ EBB_GUARDED_BY(mu_);
  // Retained regions by size (bytes -> address or device handle), reused best-fit (a device
  // pool: the same size only, since a device handle cannot be split).
  std::multimap<uint64_t, void*> retained_ EBB_GUARDED_BY(mu_);
  const std::unique_ptr<KvDeviceMemory> device_;
  uint64_t device_limit_ = 0;  // set before any allocation, read-only after
  uint64_t device_fixed_ = 0;
  std::string device_option_;
};

}  // namespace ebb::internal
