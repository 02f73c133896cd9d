#include "model/cache_builder.h"

#include <chrono>

#include "core/log.h"
#include "memory/anon_peak.h"
#include "platform/thread.h"

namespace ebb::internal {

CacheBuilder::CacheBuilder(ModelCache cache, ModelCache::BuildJob job, std::string what,
                           std::function<void(bool, uint64_t)> on_finish)
    : cache_(std::move(cache)),
      job_(std::move(job)),
      what_(std::move(what)),
      on_finish_(std::move(on_finish)) {
  thread_ = std::thread([this] {
    // Lowest CPU priority for this thread alone: the build uses what the requests leave. ORT
    // runs the build's session on this thread (one intra-op thread). Best effort.
    platform::LowerThreadPriority();
    bool committed = false;
    AnonPeakSampler memory;
    try {
      committed = cache_.BuildEntry(job_);
    } catch (...) {
      // BuildEntry never throws; a cache must never take the process down.
    }
    const uint64_t peak = memory.Stop();
    if (on_finish_) on_finish_(committed, peak);
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    committed_ = committed;
    cv_.notify_all();
  });
}

CacheBuilder::~CacheBuilder() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; })) {
      EBB_LOG_WARN(
          "model cache: finishing the background build for {} before unloading it (once per "
          "model and options; model_cache.dir=off skips it)",
          what_);
    }
  }
  thread_.join();
}

bool CacheBuilder::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool CacheBuilder::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return committed_;
}

}  // namespace ebb::internal
