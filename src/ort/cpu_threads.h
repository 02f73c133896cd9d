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

#include "platform/system_info.h"

namespace ebb::internal {

// The topology and the cgroup quota are read through the platform seam
// (platform/system_info.h); their names are used here as before.
using platform::CgroupCpuQuota;
using platform::CpuTopology;
using platform::ReadCpuTopology;

// The thread count for `t` (above). Pure: tested on made-up topologies.
int PhysicalCoresFor(const CpuTopology& t);

// PhysicalCoresFor(ReadCpuTopology()), computed once per process.
int DefaultIntraOpThreads();

}  // namespace ebb::internal
