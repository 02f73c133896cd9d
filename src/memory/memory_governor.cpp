#include "memory/memory_governor.h"

#include <algorithm>
#include <string>

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::internal {

void MemoryGovernor::Admit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (limit_ > 0 && in_use_ + bytes > limit_) {
    throw Error(ErrorCode::ResourceExhausted,
                "KV cache needs " + FormatBytes(bytes) + " (" + std::to_string(bytes) +
                    " bytes) but the runtime-wide budget memory.limit=" + std::to_string(limit_) +
                    " (" + FormatBytes(limit_) + ") has " + std::to_string(in_use_) +
                    " bytes in use by all models; lower max_length or the batch size, finish "
                    "other requests, or raise memory.limit");
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
}

void MemoryGovernor::Release(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= std::min(in_use_, bytes);
}

void MemoryGovernor::set_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes;
}
uint64_t MemoryGovernor::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}
uint64_t MemoryGovernor::kv_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}
uint64_t MemoryGovernor::kv_peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}
void MemoryGovernor::AddModel(int delta) {
  std::lock_guard<std::mutex> lock(mu_);
  models_ += delta;
}
int MemoryGovernor::num_models() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_;
}

}  // namespace ebb::internal
