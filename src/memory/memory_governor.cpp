#include "memory/memory_governor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::internal {

bool MemoryGovernor::Fits(uint64_t bytes, uint64_t* shortfall) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t used = ChargedBytes(weights_, in_use_);
  if (limit_ == 0 || used + bytes <= limit_) return true;
  *shortfall = used + bytes - limit_;
  return false;
}

void MemoryGovernor::Reclaim(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(reclaim_mu_);
  uint64_t freed = 0;
  for (auto& [id, fn] : reclaimers_) {
    if (freed >= bytes) break;
    freed += fn(bytes - freed);
  }
}

uint64_t MemoryGovernor::AddReclaimer(ReclaimFn fn) {
  std::lock_guard<std::mutex> lock(reclaim_mu_);
  const uint64_t id = next_reclaimer_++;
  reclaimers_.emplace(id, std::move(fn));
  return id;
}

void MemoryGovernor::RemoveReclaimer(uint64_t id) {
  std::lock_guard<std::mutex> lock(reclaim_mu_);
  reclaimers_.erase(id);
}

void MemoryGovernor::Admit(uint64_t bytes, bool may_reclaim) {
  uint64_t shortfall = 0;
  if (may_reclaim && !Fits(bytes, &shortfall)) Reclaim(shortfall);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t used = ChargedBytes(weights_, in_use_);
  if (limit_ > 0 && used + bytes > limit_) {
    throw Error(ErrorCode::ResourceExhausted,
                "KV cache needs " + FormatBytes(bytes) + " (" + std::to_string(bytes) +
                    " bytes) but the runtime-wide budget memory.limit=" + std::to_string(limit_) +
                    " (" + FormatBytes(limit_) + ") has " + std::to_string(used) +
                    " bytes in use by all models (weights " + std::to_string(weights_) + ", KV " +
                    std::to_string(in_use_) +
                    "); lower max_length or the batch size, finish other requests, unload a "
                    "model, or raise memory.limit");
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
}

void MemoryGovernor::Release(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= std::min(in_use_, bytes);
}

namespace {
thread_local uint64_t t_refused_weights = 0;  // TakeRefusedWeightsCharge
}  // namespace

uint64_t MemoryGovernor::TakeRefusedWeightsCharge() { return std::exchange(t_refused_weights, 0); }

void MemoryGovernor::ChargeWeights(uint64_t bytes, const std::string& model_id) {
  uint64_t shortfall = 0;
  if (!Fits(bytes, &shortfall)) Reclaim(shortfall);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t used = ChargedBytes(weights_, in_use_);
  if (limit_ > 0 && used + bytes > limit_) {
    t_refused_weights = bytes;
    throw Error(
        ErrorCode::ResourceExhausted,
        "model '" + model_id + "' needs " + FormatBytes(bytes) + " (" + std::to_string(bytes) +
            " bytes) of weights but the runtime-wide budget "
            "memory.limit=" +
            std::to_string(limit_) + " (" + FormatBytes(limit_) + ") has " + std::to_string(used) +
            " bytes in use by all models (weights " + std::to_string(weights_) + ", KV " +
            std::to_string(in_use_) + "); unload a model or raise memory.limit");
  }
  weights_ += bytes;
}

void MemoryGovernor::ReleaseWeights(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  weights_ -= std::min(weights_, bytes);
}

uint64_t MemoryGovernor::weights() const {
  std::lock_guard<std::mutex> lock(mu_);
  return weights_;
}

GovernorUsage MemoryGovernor::Usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {limit_, weights_, in_use_, peak_, ChargedBytes(weights_, in_use_)};
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
