// ebb/runtime.h — process-wide state: the runtime-wide memory budget and process statistics.
//
// ebb has one Runtime per process (ONNX Runtime allows one Env per process, and the CPU arena
// options are process-wide too). Model::Load registers every model with it.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstdint>

#include "ebb/stats.h"

namespace ebb {

class Runtime {
 public:
  static Runtime& Default();

  // memory.limit: the KV memory of all loaded models together may not exceed `bytes`
  // (0 = no limit). A generator whose KV would go over it is refused with ResourceExhausted
  // naming the bytes needed, in use and allowed; running generators are unaffected. The per-model
  // kv_cache.max_bytes applies as well.
  void SetMemoryLimit(uint64_t bytes);
  uint64_t memory_limit() const;

  // Process figures, and KV summed over all loaded models (cpu_arena: not available here; see
  // Model::memory_stats for a model's arena).
  MemoryStats Stats() const;
  int num_models() const;

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  Runtime() = default;
};

}  // namespace ebb
