// ort/cpu_kernels.h — which of ONNX Runtime's CPU kernels (MLAS) run on this machine, derived
// from the CPU's flags the way MLAS dispatches on them (issue 28: a figure is read against the
// kernel path it came from, in `ebb info`, the model cache key and the benchmarks).
#pragma once

#include <set>
#include <string>

#include "platform/system_info.h"

namespace ebb::internal {

// The CPU's feature flags (platform/system_info.h: lower case, e.g. "avx2", "avx512_vnni",
// "amx_int8"; empty if unknown), the input of the functions below.
using platform::CpuFlags;

// The kernel family MLAS (ORT 1.30, onnxruntime/core/mlas/lib/platform.cpp) dispatches its int4
// MatMulNBits (QNBitGemm) to, given `flags`: "AVX512VNNI" (avx512f + bw/dq/vl + avx512_vnni),
// "AVX512" (avx512f + bw/dq/vl), "AVX2VNNI" (avx2 + fma + avx_vnni), "AVX2" (avx2 + fma), "NEON"
// (aarch64), or "generic" (none of them: MLAS's portable code). MLAS has no AMX kernel for int4
// (its AMX code is 8-bit QGEMM only), so AMX flags do not change the answer. Pure: tested on
// flag sets.
std::string MlasInt4Kernel(const std::set<std::string>& flags);

// One line for people: "MLAS int4 MatMulNBits: AVX512VNNI (CPU has AMX; MLAS uses it for 8-bit
// QGEMM only)". For `ebb info` (ebb::CpuKernels()).
std::string DescribeCpuKernels(const std::set<std::string>& flags);

}  // namespace ebb::internal
