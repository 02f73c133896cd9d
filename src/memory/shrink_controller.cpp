#include "memory/shrink_controller.h"

#include "core/log.h"
#include "ebb/error.h"
#include "ebb/stats.h"

namespace ebb::internal {
namespace {
// ORT's run config key; the value names the devices whose arenas shrink.
constexpr const char* kShrinkKey = "memory.enable_memory_arena_shrinkage";
constexpr const char* kCpuArena = "cpu:0";
}  // namespace

ShrinkController::ShrinkController(bool has_cpu_arena, std::function<void()> minimal_step,
                                   std::function<void()> trim)
    : has_cpu_arena_(has_cpu_arena),
      minimal_step_(std::move(minimal_step)),
      trim_(std::move(trim)) {}

Ort::RunOptions ShrinkController::BeginRun(bool* shrink) {
  in_flight_.fetch_add(1);
  *shrink = pending_step_shrink_.exchange(false);
  Ort::RunOptions ro;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, v] : run_options_) {
    if (k == kShrinkKey) continue;  // ebb decides when to shrink (see below)
    ro.AddConfigEntry(k.c_str(), v.c_str());
  }
  // Only name a device that has an arena: ORT fails the Run() otherwise.
  if (*shrink && has_cpu_arena_) ro.AddConfigEntry(kShrinkKey, kCpuArena);
  return ro;
}

void ShrinkController::EndRun(bool shrink, bool ok) {
  in_flight_.fetch_sub(1);
  if (!shrink) return;
  if (!ok) {
    pending_step_shrink_ = true;  // try again on the next step
    return;
  }
  trim_();
  ++num_shrinks_;
}

void ShrinkController::ShrinkNow() {
  std::lock_guard<std::mutex> serial(shrink_mu_);
  pending_step_shrink_ = true;
  if (in_flight_.load() > 0) return;  // rides on the end of the running step
  if (!has_cpu_arena_) {
    // Nothing for ORT to do; trim what ebb owns.
    if (pending_step_shrink_.exchange(false)) {
      trim_();
      ++num_shrinks_;
    }
    return;
  }
  try {
    minimal_step_();  // picks up pending_step_shrink_ in BeginRun
  } catch (const Error& e) {
    EBB_LOG_WARN("shrink: the minimal step failed ({}); trimming KV and heap only", e.what());
    if (pending_step_shrink_.exchange(false)) {
      trim_();
      ++num_shrinks_;
    }
  }
}

void ShrinkController::EndRequest() {
  const uint64_t n = ++num_requests_;
  bool shrink = after_next_request_.exchange(false);
  const uint32_t every = every_n_.load();
  if (every > 0 && (n - every_base_.load()) % every == 0) shrink = true;
  const uint64_t above = above_bytes_.load();
  if (above > 0) {
    const ProcessMemory pm = ReadProcessMemory();
    if (pm.rss_bytes > 0 && static_cast<uint64_t>(pm.rss_bytes) > above) shrink = true;
  }
  if (shrink) ShrinkNow();
}

void ShrinkController::SetRunOption(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    run_options_[key] = value;
  }
  EBB_LOG_INFO("run option {}='{}' -> ORT run config entry for every later Run()", key, value);
}

void ShrinkController::ClearRunOption(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  run_options_.erase(key);
}

std::map<std::string, std::string> ShrinkController::RunOptions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return run_options_;
}

}  // namespace ebb::internal
