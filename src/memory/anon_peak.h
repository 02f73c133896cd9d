// AnonPeakSampler — the highest anonymous memory of this process (ReadProcessMemory().anon_bytes:
// RssAnon + VmSwap) while a piece of work runs, sampled on a thread of its own.
//
// Why sampling: the kernel keeps a high-water mark of the whole RSS (VmHWM), which counts the
// file pages a load maps, but none of anonymous memory alone, which is what a load costs the
// machine (docs/memory.md "The first load"). Every 10 ms, /proc/self/status is read (about 20 µs);
// a spike shorter than the period can be missed, so the figure is a lower bound of the true peak.
//
// Ownership and threads: the sampler owns its thread, started by the constructor and joined by
// Stop() or the destructor. Stop() and peak_bytes() may be called from any one thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ebb::internal {

class AnonPeakSampler {
 public:
  static constexpr int kPeriodMs = 10;
  AnonPeakSampler();
  ~AnonPeakSampler();
  AnonPeakSampler(const AnonPeakSampler&) = delete;
  AnonPeakSampler& operator=(const AnonPeakSampler&) = delete;

  // Takes a last sample, stops the thread and returns the peak (bytes; 0 when /proc could not be
  // read). Later calls return the same figure.
  uint64_t Stop();
  uint64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }

 private:
  void Sample();
  std::atomic<uint64_t> peak_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   // guarded by mu_
  std::thread thread_;  // last: started once every member above exists
};

}  // namespace ebb::internal
