// MemoryGovernor — accounting behind a Runtime: the KV bytes of all its models against
// memory.limit. One per Runtime (owned by its state, which every model of it holds).
//
// Every model's KvPool admits through Admit() before it maps memory and calls Release() when
// the bytes leave "in use". Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

namespace ebb::internal {

class MemoryGovernor {
 public:
  // Reserves `bytes` against memory.limit or throws ebb::Error(ResourceExhausted) with the bytes
  // needed, in use and allowed, and the option to change. Nothing is reserved on failure.
  void Admit(uint64_t bytes);
  void Release(uint64_t bytes);

  void set_limit(uint64_t bytes);
  uint64_t limit() const;
  uint64_t kv_in_use() const;
  uint64_t kv_peak() const;
  void AddModel(int delta);
  int num_models() const;

 private:
  mutable std::mutex mu_;
  uint64_t limit_ = 0;   // guarded by mu_
  uint64_t in_use_ = 0;  // guarded by mu_
  uint64_t peak_ = 0;    // guarded by mu_
  int models_ = 0;       // guarded by mu_
};

}  // namespace ebb::internal
