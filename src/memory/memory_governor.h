// MemoryGovernor — accounting behind a Runtime: the weights and the KV bytes of all its models
// against memory.limit. One per Runtime (owned by its state, which every model of it holds).
//
// A model's weights (its weight files' bytes) are charged from the end of its load until it is
// unloaded (ChargeWeights / ReleaseWeights); every model's KvPool admits through Admit() before
// it maps memory and calls Release() when the bytes leave "in use". ORT's arena (activations) is
// not charged: ORT grows it inside Run(); cap it with arena.max_mem.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace ebb::internal {

// What memory.limit is charged with: the weights plus the KV in use. The one place this sum is
// written; the governor's admission, Runtime::Stats() and a model's MemoryStats use it.
constexpr uint64_t ChargedBytes(uint64_t weights_bytes, uint64_t kv_in_use_bytes) {
  return weights_bytes + kv_in_use_bytes;
}

// One consistent reading of the governor's counters (bytes), taken under its lock.
struct GovernorUsage {
  uint64_t limit_bytes = 0;  // memory.limit; 0 = none
  uint64_t weights_bytes = 0;
  uint64_t kv_in_use_bytes = 0;
  uint64_t kv_peak_bytes = 0;
  uint64_t used_bytes = 0;  // ChargedBytes(weights_bytes, kv_in_use_bytes)
};

class MemoryGovernor {
 public:
  // Drops a model's prefix cache (least recently used first) until about `bytes` were freed;
  // returns the bytes freed.
  using ReclaimFn = std::function<uint64_t(uint64_t bytes)>;

  // Reserves `bytes` against memory.limit or throws ebb::Error(ResourceExhausted) with the bytes
  // needed, in use and allowed, and the option to change. Nothing is reserved on failure.
  // Before refusing, and when `may_reclaim`, it asks every registered reclaimer (the models'
  // prefix caches) for the shortfall once: a request is not refused for memory a cache holds.
  void Admit(uint64_t bytes, bool may_reclaim = true);
  void Release(uint64_t bytes);
  // Charges a model's weights or throws ebb::Error(ResourceExhausted) naming the model, the
  // bytes and what is in use; nothing is charged on failure.
  void ChargeWeights(uint64_t bytes, const std::string& model_id);
  // The bytes of the last ChargeWeights this thread had refused, then 0 (cleared by the read): how
  // a model manager learns what a failed load really needed (its weight files plus what only the
  // load knows, such as ebb's anonymous int4 repack) to make that room and load again.
  static uint64_t TakeRefusedWeightsCharge();
  // A model's prefix cache registers at load and unregisters before it is destroyed;
  // RemoveReclaimer waits for a reclaim that is running.
  uint64_t AddReclaimer(ReclaimFn fn);
  void RemoveReclaimer(uint64_t id);
  void ReleaseWeights(uint64_t bytes);

  void set_limit(uint64_t bytes);
  uint64_t limit() const;
  uint64_t kv_in_use() const;
  uint64_t kv_peak() const;
  uint64_t weights() const;
  GovernorUsage Usage() const;
  void AddModel(int delta);
  int num_models() const;

 private:
  // Asks the reclaimers for `bytes` (without mu_ held: their blocks come back through Release).
  void Reclaim(uint64_t bytes);
  // Whether `bytes` more fit under the limit; else the shortfall in *shortfall.
  bool Fits(uint64_t bytes, uint64_t* shortfall) const;

  std::mutex reclaim_mu_;  // held while reclaimers run; taken before mu_, never after
  std::map<uint64_t, ReclaimFn> reclaimers_;  // guarded by reclaim_mu_
  uint64_t next_reclaimer_ = 1;               // guarded by reclaim_mu_
  mutable std::mutex mu_;
  uint64_t limit_ = 0;    // guarded by mu_
  uint64_t in_use_ = 0;   // KV, guarded by mu_
  uint64_t weights_ = 0;  // guarded by mu_
  uint64_t peak_ = 0;     // guarded by mu_
  int models_ = 0;        // guarded by mu_
};

}  // namespace ebb::internal
