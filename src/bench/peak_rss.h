// Per-iteration peak RSS for `ebb bench` (process figures come from ebb::ReadProcessMemory).
#pragma once

namespace ebb::bench {

// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs, Linux >= 4.0), so that a
// later ReadProcessMemory().peak_rss_bytes is the peak since this call. Returns false where the
// kernel refuses (VmHWM then stays the peak since the process started).
bool ResetPeakRss();

}  // namespace ebb::bench
