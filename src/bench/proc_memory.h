// Process memory figures from /proc/self/status (Linux), in bytes.
// Thread-safe (each call reads the file afresh). Fields the kernel does not report are 0.
#pragma once

#include <cstdint>
#include <string_view>

namespace ebb::bench {

struct ProcMemory {
  uint64_t rss_bytes = 0;       // VmRSS: resident set size
  uint64_t peak_rss_bytes = 0;  // VmHWM: high-water mark of VmRSS over the process's life
  uint64_t anon_bytes = 0;      // RssAnon + VmSwap: anonymous memory, resident or swapped
  uint64_t swap_bytes = 0;      // VmSwap
};

// Parses the text of a /proc/<pid>/status file ("VmRSS:   1234 kB" lines).
ProcMemory ParseProcStatus(std::string_view text);

// Reads /proc/self/status; all zeros where it cannot be read (non-Linux).
ProcMemory ReadProcMemory();

// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs, Linux >= 4.0), so that a
// later ReadProcMemory().peak_rss_bytes is the peak since this call. Returns false where the
// kernel refuses (VmHWM then stays the peak since the process started).
bool ResetPeakRss();

}  // namespace ebb::bench
