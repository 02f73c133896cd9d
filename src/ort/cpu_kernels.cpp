#include "ort/cpu_kernels.h"

#include <fstream>
#include <sstream>

#include "ebb/version.h"

namespace ebb::internal {

std::set<std::string> CpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> have;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    for (std::string w; words >> w;) have.insert(w);
    break;  // the first CPU's: MLAS assumes every core has the same features
  }
  return have;
}

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
