// platform/system_info: what the kernel tells about this machine and this process: CPU model and
// feature flags, physical memory, the CPUs this process may run on and their cores, the cgroup
// CPU quota, the process's memory status, and the peak-RSS reset. Part of the platform seam
// (band 0, docs/architecture.md "The platform seam"). Nothing here throws: what cannot be read
// comes back empty, 0 or nullopt, as each function says.
// Thread-safety: every function reads the system afresh; no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ebb::platform {

// This process's memory status as "Key:   value kB" lines with the keys VmRSS, VmHWM, RssAnon,
// VmSwap, RssFile and RssShmem (the format of Linux's /proc/self/status, which is what Linux
// returns; a port writes the keys it knows in that format). nullopt when unreadable.
std::optional<std::string> ReadSelfMemoryStatus();

// Resets this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0: "5" into
// /proc/self/clear_refs). False where the system refuses or has no such reset.
bool ResetPeakRss();

// The CPU's feature flags, lower case as Linux names them ("avx2", "avx512_vnni", "amx_int8" on
// x86-64, "asimd" on Arm): the first CPU's (every core is assumed to have the same). Empty when
// unknown.
std::set<std::string> CpuFlags();

// The CPU's model name ("AMD EPYC 9R45"); nullopt when unknown.
std::optional<std::string> CpuModelName();

// Installed physical memory in bytes; 0 when unknown.
uint64_t PhysicalMemoryBytes();

// How many logical CPUs this process may run on (its affinity mask); 0 when unknown.
int AllowedCpuCount();

// The operating system for reports: "Linux 6.8.0-1019-aws x86_64" (name, release, machine);
// "" when unknown.
std::string OsDescription();

// The CPUs this process may run on and their cores.
struct CpuTopology {
  std::vector<int> allowed_cpus;               // the affinity mask, in CPU numbers
  std::map<int, std::pair<int, int>> core_of;  // CPU -> (physical package id, core id)
  std::optional<double> cpu_quota;             // cgroup cpu.max quota / period; none = "max"
};

// This process's topology: its affinity mask, each CPU's (package, core) from
// /sys/devices/system/cpu/cpuN/topology, and CgroupCpuQuota of its own cgroup under
// /sys/fs/cgroup. Missing files are skipped: a CPU without topology has no core_of entry, no
// cgroup is no quota.
CpuTopology ReadCpuTopology();

// The tightest cgroup v2 CPU quota (cpu.max quota / period) on the cgroup path that
// `self_cgroup` (the text of /proc/self/cgroup) names and its ancestors, under `cgroup_root`
// (/sys/fs/cgroup; tests pass a fake tree); nullopt when no level sets one ("max"), the file is
// unreadable or malformed, or the process is in no v2 hierarchy. Inside a container with its own
// cgroup namespace the path is "/" and the container's limit is the root's cpu.max.
std::optional<double> CgroupCpuQuota(const std::string& self_cgroup,
                                     const std::filesystem::path& cgroup_root);

}  // namespace ebb::platform
