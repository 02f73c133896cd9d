#include "memory/anon_peak.h"

#include <chrono>

#include "ebb/process_memory.h"

namespace ebb::internal {

AnonPeakSampler::AnonPeakSampler() {
  Sample();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(kPeriodMs), [this] { return stop_; })) {
      Sample();
    }
  });
}

AnonPeakSampler::~AnonPeakSampler() { Stop(); }

void AnonPeakSampler::Sample() {
  const int64_t anon = ReadProcessMemory().anon_bytes;
  if (anon <= 0) return;
  uint64_t seen = peak_.load(std::memory_order_relaxed);
  while (static_cast<uint64_t>(anon) > seen &&
         !peak_.compare_exchange_weak(seen, static_cast<uint64_t>(anon))) {
  }
}

uint64_t AnonPeakSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return peak_bytes();
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Sample();
  return peak_bytes();
}

}  // namespace ebb::internal
