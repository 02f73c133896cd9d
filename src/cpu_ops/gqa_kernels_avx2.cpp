// src/cpu_ops/gqa_kernels_avx2.cpp — gqa_kernels.h's functions for AVX2 + FMA + F16C (8 lanes).
#include <immintrin.h>

#include <cstdint>

#include "gqa_kernels.h"

// Everything below is compiled for this instruction set (clang spells GCC's target pragma as an
// attribute applied to every function).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "gqa_kernels_impl.h"

namespace ebb_cpu_ops {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static V Load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void StoreHalf(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float x) { return _mm256_set1_ps(x); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static V FmAdd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }    // a b + c
  static V FnmAdd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
  static V Round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127]: n + 127 in the exponent bits.
  static V Pow2(V n) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static float Sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

const GqaKernels& GqaKernelsAvx2() {
  static const GqaKernels k = gqa_impl::Make<Avx2>("AVX2");
  return k;
}

}  // namespace ebb_cpu_ops

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
