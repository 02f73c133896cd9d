// ModelImpl's generator slots and its release (model/model_impl.h): every generator holds a
// slot for its whole life; Release() refuses new slots, waits (or detaches idle generators) and
// frees the session, the KV pool and the arena lease only when none runs.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "memory/heap_trim.h"
#include "memory/mapped_file_guard.h"
#include "memory/memory_governor.h"
#include "model/cache_builder.h"
#include "model/model_impl.h"

namespace ebb::internal {

uint64_t ModelImpl::AcquireGeneratorSlot(bool in_call) {
  MutexLock lock(slot_mu_);
  if (released_) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + id + "' was unloaded; load it again to generate");
  }
  if (weights_released_) {
    // The weights come back into memory with this request: memory.limit charges them again
    // (ResourceExhausted, naming the budget, when it has no room; the model stays released).
    if (host && !weights_charged) {
      host->governor().ChargeWeights(FileWeightsBytes(), id);
      weights_charged = true;
    }
    weights_released_ = false;
  }
  const uint64_t slot = next_slot_++;
  SlotState st;
  st.in_call = in_call;
  st.thread = std::this_thread::get_id();
  slots_[slot] = st;
  return slot;
}

void ModelImpl::BeginCall(uint64_t slot) {
  MutexLock lock(slot_mu_);
  SlotState& st = slots_.at(slot);
  // While an unload waits, the open generations it waits for go on; nothing new starts.
  if (released_ && (st.detached || !st.request_open)) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + id +
                    "' was unloaded while this generator was idle, which detached it; its state "
                    "is kept for reading, but it cannot run. Load the model again and create a "
                    "new generator");
  }
  st.in_call = true;
  st.thread = std::this_thread::get_id();
}

void ModelImpl::EndCall(uint64_t slot, bool request_open) noexcept {
  {
    MutexLock lock(slot_mu_);
    auto it = slots_.find(slot);
    if (it == slots_.end()) return;
    it->second.in_call = false;
    it->second.request_open = request_open;
  }
  slot_cv_.notify_all();
}

bool ModelImpl::weights_broken() const { return weights_guard && weights_guard->broken(); }

void ModelImpl::ReleaseGeneratorSlot(uint64_t slot) noexcept {
  bool free_now = false;
  {
    MutexLock lock(slot_mu_);
    slots_.erase(slot);
    free_now = slots_.empty() && free_on_last_slot_;
    if (free_now) free_on_last_slot_ = false;
  }
  slot_cv_.notify_all();
  if (free_now) {
    try {
      FreeResources();
    } catch (...) {
      // A destructor's path never throws; FreeResources only resets what it owns.
    }
  }
}

int ModelImpl::live_generators() const {
  MutexLock lock(slot_mu_);
  return static_cast<int>(slots_.size());
}

bool ModelImpl::released() const {
  MutexLock lock(slot_mu_);
  return released_;
}

void ModelImpl::Touch() {
  last_used_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
}

void ModelImpl::Release(ReleaseMode mode) {
  int detached = 0;
  {
    MutexLock lock(slot_mu_);
    if (released_) return;
    released_ = true;
    stop_idle_release_ = true;
    idle_cv_.notify_all();
    const std::thread::id self = std::this_thread::get_id();
    const auto quiet = [&]() EBB_REQUIRES(slot_mu_) {
      for (const auto& [slot, st] : slots_) {
        if (st.in_call) return false;
        if (mode == ReleaseMode::kWaitForRequests && st.request_open && st.thread != self) {
          return false;
        }
      }
      return true;
    };
    while (!quiet()) slot_cv_.wait(slot_mu_);
    detached = static_cast<int>(slots_.size());
    for (auto& [slot, st] : slots_) st.detached = true;
    if (detached > 0) free_on_last_slot_ = true;
  }
  if (idle_release_thread_.joinable()) idle_release_thread_.join();
  if (detached > 0) {
    EBB_LOG_INFO(
        "unloading '{}' with {} idle generator(s) alive: they are detached and fail on "
        "their next call; the model's memory is freed when the last one is destroyed",
        id, detached);
    return;
  }
  FreeResources();
}

void ModelImpl::FreeResources() {
  if (idle_release_thread_.joinable() &&
      idle_release_thread_.get_id() != std::this_thread::get_id()) {
    idle_release_thread_.join();
  }
  // The background cache build reads the session: it finishes first (cache_builder.h).
  cache_builder.reset();
  // The guard's ranges must not outlive the session's mappings (an address reused by another
  // mapping would be absorbed).
  weights_guard.reset();
  // No generator is alive and none can start: free the session (and an arena it alone uses),
  // the batch's KV rows, the KV pool's retained memory, then the heap.
  {
    std::lock_guard<std::mutex> lock(decode_batcher_mu);
    decode_batcher.reset();
  }
  // The cache's blocks go back to the pool first (no reclaim may run on it after this). The
  // object itself stays until the model is destroyed: a Stats() reader may still hold the model.
  if (prefix_reclaimer != 0 && host) host->governor().RemoveReclaimer(prefix_reclaimer);
  prefix_reclaimer = 0;
  if (kv_pool) kv_pool->set_reclaim_fn(nullptr);
  if (prefix_cache) prefix_cache->Clear();
  if (constraints) constraints->Clear();
  // Device KV buffers are the session's allocator's: they go back before the session (and the
  // device context it may be the last holder of) does.
  if (kv_pool && kv_pool->device() != nullptr) kv_pool->Trim();
  session.reset();
  if (kv_pool) kv_pool->Trim();
  env_arena.reset();
  TrimHeap();
  if (host) host->governor().ReleaseWeights(ChargedWeightsBytes());
  weights_charged = false;
  anon_weights_charged = false;
}

}  // namespace ebb::internal
