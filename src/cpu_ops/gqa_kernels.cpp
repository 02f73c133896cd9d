// src/cpu_ops/gqa_kernels.cpp — GqaKernelsFor (gqa_kernels.h): the CPU's best set.
#include "gqa_kernels.h"

#include <cstdlib>
#include <cstring>

namespace ebb_cpu_ops {

const GqaKernels* GqaKernelsFor() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
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
