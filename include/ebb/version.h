// ebb/version.h — build and runtime identification.
#pragma once

#include <string>
#include <vector>

#include "ebb/export.h"

namespace ebb {

// ebb's own version, e.g. "0.1.0".
EBB_API std::string Version();

// The ONNX Runtime version actually loaded at run time (not the headers' version).
EBB_API std::string OrtVersion();

// Execution providers compiled into the loaded ONNX Runtime, e.g. {"CPUExecutionProvider"}.
EBB_API std::vector<std::string> AvailableProviders();

// The CPU kernels ONNX Runtime runs on this machine, in one line, e.g. "MLAS int4 MatMulNBits:
// AVX512VNNI (CPU has AMX; MLAS uses it for 8-bit QGEMM only)". Derived from the CPU's flags the
// way ORT's MLAS dispatches on them (ORT does not report its choice); `ebb info` prints it.
EBB_API std::string CpuKernels();

}  // namespace ebb
