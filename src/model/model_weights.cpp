// ModelImpl's weights (model/model_impl.h): their state (anonymous, file-backed, released,
// broken), handing their file-backed pages back (ReleaseWeights, by hand, when idle or under
// memory pressure) and their figures.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "memory/file_pages.h"
#include "memory/heap_trim.h"
#include "memory/mapped_file_guard.h"
#include "memory/memory_governor.h"
#include "memory/memory_pressure.h"
#include "model/model_cache.h"
#include "model/model_impl.h"

namespace ebb::internal {

void ModelImpl::CheckWeightsIntact() const {
  if (!weights_broken()) return;
  throw Error(ErrorCode::Unavailable,
              "model '" + id + "': " + weights_guard->Describe() + " (cache entry " +
                  weights_entry.string() +
                  "); no token of this step was used. Unload and load the model again: the load "
                  "finds the entry changed and rebuilds it");
}

WeightsRelease ModelImpl::ReleaseWeights() {
  WeightsRelease r;
  MutexLock lock(slot_mu_);
  if (released_) {
    r.reason = "model '" + id + "' was unloaded";
    return r;
  }
  // The prefix cache is memory an idle model holds too: its unpinned blocks go, whatever the
  // weights (their copies are read by no step).
  if (prefix_cache) r.prefix_cache_freed_bytes = prefix_cache->Drop(UINT64_MAX);
  if (weights_entry.empty()) {
    r.reason =
        "the weights of '" + id +
        "' are ONNX Runtime's anonymous copies (the model was not loaded from a compiled-model "
        "cache entry), which cannot be dropped without unloading; load it again once its cache "
        "entry is built (model_cache.dir), or unload it";
    return r;
  }
  if (!slots_.empty()) {
    r.reason =
        std::to_string(slots_.size()) + " request(s) running on '" + id + "'; retry when idle";
    return r;
  }
  const FilePagesRelease pages = ReleaseFilePages(weights_entry);
  r.resident_before_bytes = pages.before.resident_bytes;
  r.resident_after_bytes = pages.after.resident_bytes;
  r.released = true;
  if (!weights_released_) {
    if (weights_charged && host) {
      // The file-backed part: an anonymous repack (a node whose pack file was missing) stays
      // in memory and charged.
      host->governor().ReleaseWeights(FileWeightsBytes());
      weights_charged = false;
    }
    weights_released_ = true;
    ++num_weight_releases_;
  }
  EBB_LOG_INFO("released the weights of '{}': {} resident before, {} after", id,
               FormatBytes(r.resident_before_bytes), FormatBytes(r.resident_after_bytes));
  return r;
}

ebb::WeightsState ModelImpl::WeightsState() const {
  MutexLock lock(slot_mu_);
  return weights_entry.empty() ? ebb::WeightsState::kAnonymous
         : weights_broken()    ? ebb::WeightsState::kBroken
         : weights_released_   ? ebb::WeightsState::kReleased
                               : ebb::WeightsState::kFileBacked;
}

WeightsMemory ModelImpl::WeightsStats() const {
  WeightsMemory w;
  w.state = WeightsState();
  {
    MutexLock lock(slot_mu_);
    w.num_releases = num_weight_releases_;
  }
  w.load_ms = load_ms;
  w.load_peak_anon_bytes = load_peak_anon_bytes;
  w.cache = cache_state;
  if (cache_state == "building") {
    const int built = cache_build_result.load();
    if (built >= 0) {
      w.cache = built == 1 ? "built" : "failed";
      w.cache_build_peak_anon_bytes = cache_build_peak_anon_bytes.load();
    }
  }
  if (weights_entry.empty()) {
    w.anon_bytes = weights_bytes;
    return w;
  }
  w.anon_bytes = repacked_anon_bytes;  // nodes whose pack file the entry lacked: repacked anew
  for (const auto& f : ModelCache::WeightFiles(weights_entry)) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    if (!ec) w.file_backed_bytes += bytes;
  }
  w.file_resident_bytes = ResidentFilePages(weights_entry).resident_bytes;
  return w;
}

void ModelImpl::StartWeightsRelease(int32_t after_idle_s, bool on_pressure,
                                    PressureSource pressure) {
  if ((after_idle_s <= 0 && !on_pressure) || weights_entry.empty()) return;
  if (on_pressure) {
    EBB_LOG_INFO(
        "'{}': releases its file-backed weights when idle under memory pressure of {} "
        "(memory.release_weights_on_pressure)",
        id, pressure.Describe());
  }
  idle_release_thread_ = std::thread([this, after_ms = int64_t{after_idle_s} * 1000, on_pressure,
                                      pressure = std::move(pressure)] {
    PressureSample previous;
    if (on_pressure) previous = ReadPressure(pressure);
    std::string pressure_reason;  // the last sample's reason, from pressure_at_ms on
    int64_t pressure_at_ms = -1;
    MutexLock lock(slot_mu_);
    while (!stop_idle_release_) {
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      const int64_t idle_ms = now - std::max(last_used_ms_.load(), loaded_unix_ms);
      const bool releasable = slots_.empty() && !weights_released_ && !released_;
      if (releasable && after_ms > 0 && idle_ms >= after_ms) {
        MutexUnlock unlocked(slot_mu_);
        EBB_LOG_INFO("'{}' idle for {} s (memory.release_weights_after_s): releasing its weights",
                     id, idle_ms / 1000);
        ReleaseWeights();
        continue;
      }
      if (on_pressure) {
        std::string reason;
        {
          // Sampled without the lock: a request may start meanwhile, which ReleaseWeights sees.
          MutexUnlock unlocked(slot_mu_);
          const PressureSample sample = ReadPressure(pressure);
          reason = PressureReason(previous, sample);
          previous = NextBaseline(previous, sample);
        }
        // Pressure seen while the model was busy still counts once it is idle, for as long as
        // PSI's own window (a counter that rose is seen by one sample only).
        if (!reason.empty()) {
          pressure_reason = std::move(reason);
          pressure_at_ms = now;
        }
        const bool recent = pressure_at_ms >= 0 && now - pressure_at_ms <= kPressureMemoryMs;
        if (recent && slots_.empty() && !weights_released_ && !released_ &&
            idle_ms >= kPressureMinIdleMs) {
          pressure_at_ms = -1;
          MutexUnlock unlocked(slot_mu_);  // then wait a poll period before the next sample
          EBB_LOG_INFO(
              "memory pressure on {}: {}; releasing the weights of idle '{}' "
              "(memory.release_weights_on_pressure)",
              pressure.Describe(), pressure_reason, id);
          ReleaseWeights();
        }
      }
      int64_t wait_ms = after_ms > 0 && releasable ? std::max<int64_t>(after_ms - idle_ms, 10)
                                                   : std::max<int64_t>(after_ms, kPressurePollMs);
      if (on_pressure) wait_ms = std::min(wait_ms, kPressurePollMs);
      idle_cv_.wait_for(slot_mu_, std::chrono::milliseconds(wait_ms));
    }
  });
}

}  // namespace ebb::internal
