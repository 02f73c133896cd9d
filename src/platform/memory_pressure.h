// platform/memory_pressure: reads whether the memory this process lives in is under pressure,
// from the files the kernel publishes: the cgroup's own (v2: memory.pressure, memory.events,
// memory.current against memory.high / memory.max; v1: memory.usage_in_bytes against
// memory.limit_in_bytes), else the machine's (/proc/pressure/memory, MemAvailable in
// /proc/meminfo). Part of the platform seam (band 0, docs/architecture.md "The platform seam");
// what counts as pressure is decided above it (memory/memory_pressure.h: PressureReason).
// Nothing here throws: a file that cannot be read leaves its field "unknown".
// The roots (`proc`, `sys_fs_cgroup`) are parameters so that tests read fake trees.
// Thread-safety: free functions over the file system; no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ebb::platform {

// Where the pressure signal is read. `cgroup` is a cgroup folder (v2 or v1 memory); empty means
// the machine-wide files under `proc` are read instead.
struct PressureSource {
  std::filesystem::path cgroup;
  std::filesystem::path proc = "/proc";
  std::string Describe() const;  // "cgroup /sys/fs/cgroup/x" or "the machine (/proc/...)"
};

// The source for `setting` (memory.pressure_cgroup): "auto" = this process's own cgroup (v2 from
// the "0::" line of PROC/self/cgroup, else the v1 "memory" controller's line) when its folder
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

}  // namespace ebb::platform
