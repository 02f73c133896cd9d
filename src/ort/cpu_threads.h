// ort/cpu_threads.h — how many intra-op threads ebb gives ONNX Runtime when nobody set
// intra_op_num_threads: the physical cores this process may run on.
//
// Why ebb sets it: ORT's default (intra_op_num_threads=0) is cpuinfo's physical-core count, or
// std::thread::hardware_concurrency() / 2 where cpuinfo gives none (PosixEnv::
// GetDefaultThreadAffinities / DefaultNumCores in onnxruntime/core/platform/posix/env.cc, "we are
// guessing the number of phys cores based on a popular HT case"). On a 2-vCPU AMD EPYC (Zen 5)
// VM that is one thread: ORT created no intra-op worker, and every ebb surface that left the
// option unset decoded 1.3x and prefilled 1.3x slower than with 2 threads (docs/benchmarks.md).
// It also ignores the process's CPU affinity and a cgroup CPU quota, so in a container limited
// to 2 CPUs of a 64-core host it starts 32 spinning threads.
//
// The count: the distinct (package, core) pairs, read from /sys/devices/system/cpu/cpuN/topology,
// of the CPUs in the process's affinity mask (sched_getaffinity); CPUs without topology files
// count one each. Then at most ceil(quota / period) of the tightest cgroup v2 cpu.max on the
// process's cgroup path. At least 1.
// Thread-safety: pure functions and reads of the process's own state.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ebb::internal {

struct CpuTopology {
  std::vector<int> allowed_cpus;               // sched_getaffinity, in CPU numbers
  std::map<int, std::pair<int, int>> core_of;  // CPU -> (physical_package_id, core_id)
  std::optional<double> cpu_quota;             // cgroup cpu.max quota / period; none = "max"
};

// The thread count for `t` (above). Pure: tested on made-up topologies.
int PhysicalCoresFor(const CpuTopology& t);

// The tightest cgroup v2 CPU quota (cpu.max quota / period) on the cgroup path that
// `self_cgroup` (the text of /proc/self/cgroup) names and its ancestors, under `cgroup_root`
// (/sys/fs/cgroup); nullopt when no level sets one ("max"), the file is unreadable or malformed,
// or the process is in no v2 hierarchy. Inside a container with its own cgroup namespace the path
// is "/" and the container's limit is the root's cpu.max.
std::optional<double> CgroupCpuQuota(const std::string& self_cgroup,
                                     const std::filesystem::path& cgroup_root);

// This process's topology, from sched_getaffinity, sysfs and cgroup v2 (missing files are
// skipped: no topology counts each CPU, no cgroup is no quota).
CpuTopology ReadCpuTopology();

// PhysicalCoresFor(ReadCpuTopology()), computed once per process.
int DefaultIntraOpThreads();

}  // namespace ebb::internal
