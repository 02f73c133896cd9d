// src/cpu_ops/gqa_kernels_avx512.cpp — gqa_kernels.h's functions for AVX-512 F/BW (16 lanes).
#include <immintrin.h>

#include <cstdint>

#include "gqa_kernels.h"

// GCC 12's AVX-512 reduce intrinsics read a self-initialized `__Y = __Y` (their *_undefined_*
// helpers) and warn at every inlining site (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Everything below is compiled for this instruction set (clang spells GCC's target pragma as an
// attribute applied to every function).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma,f16c")
#endif

#include "gqa_kernels_impl.h"

namespace ebb_cpu_ops {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void StoreHalf(uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float x) { return _mm512_set1_ps(x); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Max(V a, V b) { return _mm512_max_ps(a, b); }
  static V FmAdd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }    // a b + c
  static V FnmAdd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
  static V Round(V x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n for integral n in [-126, 127]: n + 127 in the exponent bits.
  static V Pow2(V n) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static float Sum(V v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace

const GqaKernels& GqaKernelsAvx512() {
  static const GqaKernels k = gqa_impl::Make<Avx512>("AVX-512");
  return k;
}

}  // namespace ebb_cpu_ops

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop
