// src/cpu_ops/gqa_kernels.cpp — GqaKernelsFor (gqa_kernels.h): the CPU's best set.
#include "gqa_kernels.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace ebb_cpu_ops {
namespace {

// F16C from CPUID leaf 1 (clang's __builtin_cpu_supports does not know "f16c").
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace

const GqaKernels* GqaKernelsFor() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
  // EBB_CPU_OPS_ISA=avx2 takes the AVX2 set on an AVX-512 CPU too (tests and comparisons).
  if (const char* isa = std::getenv("EBB_CPU_OPS_ISA"); isa && std::strcmp(isa, "avx2") == 0) {
    return avx2 ? &GqaKernelsAvx2() : nullptr;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return &GqaKernelsAvx512();
  }
  return avx2 ? &GqaKernelsAvx2() : nullptr;
}

}  // namespace ebb_cpu_ops
