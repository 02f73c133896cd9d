#include "memory/memory_governor.h"

#include <algorithm>
#include <string>

#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/runtime.h"

namespace ebb {
namespace internal {

MemoryGovernor& MemoryGovernor::Get() {
  static MemoryGovernor g;
  return g;
}

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

}  // namespace internal

Runtime& Runtime::Default() {
  static Runtime r;
  return r;
}
void Runtime::SetMemoryLimit(uint64_t bytes) { internal::MemoryGovernor::Get().set_limit(bytes); }
uint64_t Runtime::memory_limit() const { return internal::MemoryGovernor::Get().limit(); }
int Runtime::num_models() const { return internal::MemoryGovernor::Get().num_models(); }

MemoryStats Runtime::Stats() const {
  const auto& g = internal::MemoryGovernor::Get();
  MemoryStats s;
  s.process = ReadProcessMemory();
  s.kv.in_use_bytes = g.kv_in_use();
  s.kv.peak_in_use_bytes = g.kv_peak();
  s.kv.max_bytes = g.limit();
  return s;
}

}  // namespace ebb
