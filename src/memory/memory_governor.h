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
#include <mutex>
#include <string>

namespace ebb::internal {

class MemoryGovernor {
 public:
  // Reserves `bytes` against memory.limit or throws ebb::Error(ResourceExhausted) with the bytes
  // needed, in use and allowed, and the option to change. Nothing is reserved on failure.
  void Admit(uint64_t bytes);
  void Release(uint64_t bytes);
  // Charges a model's weights or throws ebb::Error(ResourceExhausted) naming the model, the
  // bytes and what is in use; nothing is charged on failure.
  void ChargeWeights(uint64_t bytes, const std::string& model_id);
  void ReleaseWeights(uint64_t bytes);

  void set_limit(uint64_t bytes);
  uint64_t limit() const;
  uint64_t kv_in_use() const;
  uint64_t kv_peak() const;
  uint64_t weights() const;
  void AddModel(int delta);
  int num_models() const;

 private:
  mutable std::mutex mu_;
  uint64_t limit_ = 0;    // guarded by mu_
  uint64_t in_use_ = 0;   // KV, guarded by mu_
  uint64_t weights_ = 0;  // guarded by mu_
  uint64_t peak_ = 0;     // guarded by mu_
  int models_ = 0;        // guarded by mu_
};

}  // namespace ebb::internal
