// src/cpu_ops/gqa_kernels.h — the vector parts of ebb.cpu.GroupQueryAttention (gqa_op.h), one set
// per instruction set: AVX-512 (gqa_kernels_avx512.cpp) and AVX2 + FMA + F16C
// (gqa_kernels_avx2.cpp), both from one template (gqa_kernels_impl.h). The op picks a set when a
// kernel is created (GqaKernelsFor) and calls through it; everything else in the op is scalar.
//
// A cache row is float or fp16 bits (uint16_t); `d` (head size) is a multiple of 16, at most
// 256. `hc` query heads (1 <= hc <= MaxHeads(d)) share the key and value rows they read.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>

namespace ebb_cpu_ops {

struct GqaKernels {
  const char* isa;  // "AVX-512" or "AVX2"
  // Query heads one call of scores/output can take for head size d (their accumulators in
  // registers): at least 1.
  long (*max_heads)(long d);
  // scores[h * stride + t] = q[h] . k[t] for t in [t0, t1), h < hc; q: [hc][d] floats.
  void (*scores_f32)(long hc, const float* q, const float* k, long d, long t0, long t1,
                     float* scores, long stride);
  void (*scores_f16)(long hc, const float* q, const uint16_t* k, long d, long t0, long t1,
                     float* scores, long stride);
  // out[h] = inv_sum[h] * sum over t in [t0, t1) of p[h * stride + t] * v[t], h < hc.
  void (*output_f32)(long hc, const float* p, long stride, const float* inv_sum, const float* v,
                     long d, long t0, long t1, float* out);
  void (*output_f16)(long hc, const float* p, long stride, const float* inv_sum, const uint16_t* v,
                     long d, long t0, long t1, float* out);
  // x[i] = e^(x[i] - max) for i in [0, n); returns their sum. Relative error ~2e-7 (x - max
  // below -87 gives 0).
  float (*exp_sum)(float* x, long n, float max);
  // d floats to fp16 (round to nearest even).
  void (*to_f16)(uint16_t* dst, const float* src, long d);
};

const GqaKernels& GqaKernelsAvx512();
const GqaKernels& GqaKernelsAvx2();

// The best set this CPU runs, or nullptr when it has neither AVX-512 F/BW/VL nor AVX2 + FMA +
// F16C. The environment variable EBB_CPU_OPS_ISA=avx2 picks the AVX2 set on an AVX-512 CPU too
// (so that one machine tests and measures both).
const GqaKernels* GqaKernelsFor();

}  // namespace ebb_cpu_ops
