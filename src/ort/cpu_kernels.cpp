#include "ort/cpu_kernels.h"

#include "ebb/version.h"
#include "platform/system_info.h"

namespace ebb::internal {

std::string MlasInt4Kernel(const std::set<std::string>& flags) {
  auto has = [&](const char* f) { return flags.count(f) > 0; };
#if defined(__aarch64__)
  (void)has;
  return "NEON";
#else
  // The order of platform.cpp's checks: each later one replaces the dispatch of the one before.
  std::string kernel = "generic";
  if (!has("avx2") || !has("fma")) return kernel;
  kernel = "AVX2";
  if (has("avx_vnni")) kernel = "AVX2VNNI";
  if (has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl")) {
    kernel = has("avx512_vnni") ? "AVX512VNNI" : "AVX512";
  }
  return kernel;
#endif
}

std::string DescribeCpuKernels(const std::set<std::string>& flags) {
  std::string out = "MLAS int4 MatMulNBits: " + MlasInt4Kernel(flags);
  if (flags.count("amx_int8") > 0) out += " (CPU has AMX; MLAS uses it for 8-bit QGEMM only)";
  return out;
}

}  // namespace ebb::internal

namespace ebb {

std::string CpuKernels() { return internal::DescribeCpuKernels(internal::CpuFlags()); }

}  // namespace ebb
