// GPU memory figures from NVIDIA's management library (NVML, libnvidia-ml.so.1, part of the
// NVIDIA driver), opened at run time with dlopen: ebb has no build-time NVML dependency and no
// NVML headers (the few types it needs are declared in nvml.cpp, per the NVML ABI). A machine
// without the library (no NVIDIA driver) is normal: `available` is false and `error` says why.
//
// Why: ORT's WebGPU execution provider (Dawn over Vulkan) reports no device memory, so this is
// how ebb tells how much GPU memory its process and the device use.
//
// Lifetime: the first ReadNvmlMemory() call opens the library and calls nvmlInit_v2, once per
// process (std::call_once); that outcome, success or failure, holds for the process's life. On
// success the library stays loaded and initialised until the process exits: nvmlShutdown is never
// called, because another thread may be inside an NVML call with a device handle that the
// shutdown would invalidate, and a shutdown in a static destructor would race threads still
// running at exit; the driver releases NVML's state when the process ends.
//
// Thread-safety: ReadNvmlMemory may be called from any number of threads at once (the one-time
// initialisation is guarded; NVML's own calls are thread-safe, per NVIDIA's documentation).
// Never throws.
#pragma once

#include <cstdint>
#include <string>

namespace ebb::internal {

struct NvmlMemory {
  bool available = false;  // NVML was opened and initialised; the figures below were read
  // Why not available: "no libnvidia-ml.so.1 (no NVIDIA driver): <dlerror>", "nvmlInit failed:
  // <nvmlErrorString>", a missing entry point, or "nvmlDeviceGetCount failed: ...".
  std::string error;
  // This process's GPU memory, bytes, summed over devices. Per device, NVML's compute listing
  // (nvmlDeviceGetComputeRunningProcesses_v2) and graphics listing (..GraphicsRunningProcesses_v2)
  // are read; a Vulkan process may appear in either or both, so the larger of this pid's two
  // figures counts (not their sum). Within one listing, several entries for this pid (one per MIG
  // GPU/compute instance) add up. -1 when no device lists this pid with a known figure: the
  // process uses no GPU memory yet, runs in a PID namespace (NVML lists host pids), or the driver
  // does not report per-process memory.
  int64_t process_bytes = -1;
  // nvmlDeviceGetMemoryInfo's used and total, bytes, summed over the devices; -1 unknown.
  int64_t device_used_bytes = -1;
  int64_t device_total_bytes = -1;
  int device_count = 0;        // nvmlDeviceGetCount_v2
  std::string device_name;     // device 0's nvmlDeviceGetName, e.g. "NVIDIA H200"
  std::string driver_version;  // nvmlSystemGetDriverVersion, e.g. "580.95.05"
};

// One reading (the first call also opens and initialises NVML; see above).
NvmlMemory ReadNvmlMemory();

}  // namespace ebb::internal
