// Reads whether the memory this process lives in is under pressure, from the files the kernel
// publishes: the cgroup's own (v2: memory.pressure, memory.events, memory.current against
// memory.high / memory.max; v1: memory.usage_in_bytes against memory.limit_in_bytes), else the
// machine's (/proc/pressure/memory, MemAvailable in /proc/meminfo).
//
// Why: an idle model's file-backed weights are clean page cache; the kernel reclaims them under
// pressure anyway, but by its own LRU, which also takes the pages of the model that is serving.
// Releasing the idle model's pages first (memory.release_weights_on_pressure, docs/memory.md)
// keeps the busy model's weights resident. The signal is sampled (ModelImpl reads it about once
// a second), not a PSI trigger: triggers need write access to the pressure file, which an
// unprivileged process in a container often lacks, while reading works everywhere.
//
// What counts as pressure (PressureReason), each reason named in the log:
//   - PSI: "some avg10" of the watched pressure file >= kPsiSomeAvg10Pct (10 %): tasks of the
//     cgroup (or machine) spent at least a tenth of the last 10 s waiting for memory;
//   - cgroup v2 memory.events: the "high" or "max" counter rose since the previous sample (the
//     cgroup was throttled at memory.high or hit memory.max);
//   - the cgroup's usage (page cache included) is within kHeadroomPct (5 %) of its limit
//     (memory.high, else memory.max; v1 memory.limit_in_bytes);
//   - machine-wide only: MemAvailable below kHeadroomPct of MemTotal.
//
// Thread-safety: free functions over the file system; no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ebb::internal {

constexpr double kPsiSomeAvg10Pct = 10.0;
constexpr double kHeadroomPct = 5.0;

// Where the pressure signal is read. `cgroup` is a cgroup folder (v2 or v1 memory); empty means
// the machine-wide files under `proc` are read instead.
struct PressureSource {
  std::filesystem::path cgroup;
  std::filesystem::path proc = "/proc";
  std::string Describe() const;  // "cgroup /sys/fs/cgroup/x" or "the machine (/proc)"
};

// The source for `setting` (memory.pressure_cgroup): "auto" = this process's own cgroup (v2 from
// the "0::" line of /proc/self/cgroup, else the v1 "memory" controller's line) when its folder
// exists under `sys_fs_cgroup`, else the machine; "machine" = the machine; else a cgroup folder
// given by the admin (checked by the caller to exist).
PressureSource ResolvePressureSource(const std::string& setting,
                                     const std::filesystem::path& proc = "/proc",
                                     const std::filesystem::path& sys_fs_cgroup = "/sys/fs/cgroup");

// One reading. Fields that the source does not publish keep their "unknown" value.
struct PressureSample {
  double psi_some_avg10 = -1;  // percent; -1 = no PSI file
  int64_t events_high = -1;    // cgroup v2 memory.events; -1 = no file
  int64_t events_max = -1;
  uint64_t usage_bytes = 0;  // cgroup usage, or MemTotal - MemAvailable for the machine
  uint64_t limit_bytes = 0;  // memory.high, else memory.max (v1 limit_in_bytes), or MemTotal;
                             // 0 = unlimited
};

PressureSample ReadPressure(const PressureSource& source);

// Why `now` shows pressure, given the previous sample of the same source (events counters are
// compared with it); empty when there is none. Pure function.
std::string PressureReason(const PressureSample& previous, const PressureSample& now);

// The sample the next PressureReason compares against: `now`, except that a counter `now` could
// not read (-1: a file mid-rewrite, a cgroup briefly gone) keeps its value from `previous`, so a
// rise across the gap is still seen.
PressureSample NextBaseline(const PressureSample& previous, const PressureSample& now);

}  // namespace ebb::internal
