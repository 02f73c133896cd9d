// ModelHost — what a loaded model needs from the runtime that owns it: the KV budget of all the
// runtime's models and the request observers. Declared here, below runtime/, so that model/ and
// generate/ depend on an interface and not on the Runtime (dependencies point down).
#pragma once

#include <atomic>
#include <cstdint>

#include "ebb/observer.h"
#include "memory/memory_governor.h"

namespace ebb::internal {

class ModelHost {
 public:
  virtual ~ModelHost() = default;
  // The runtime-wide KV budget (memory.limit) that every model's KvPool admits through.
  virtual MemoryGovernor& governor() = 0;
  // Called by generators on the request's thread; must not throw.
  virtual void NotifyRequestStart(const RequestStart& start) noexcept = 0;
  virtual void NotifyRequestEnd(const RequestEnd& end) noexcept = 0;
};

// Request ids, unique within the process across generations and embedding calls.
inline uint64_t NextRequestId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace ebb::internal
