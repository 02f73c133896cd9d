// src/cpu_ops/gqa_kernels_impl.h — the template of gqa_kernels.h's functions, over a vector type
// `S` (S::V, S::kWidth lanes, and its loads, arithmetic and sums). Included only by
// gqa_kernels_avx512.cpp and gqa_kernels_avx2.cpp, each inside a `#pragma GCC target` region, so
// every function here is compiled for that instruction set.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gqa_kernels.h"

namespace ebb_cpu_ops::gqa_impl {

constexpr long kPrefetchRows = 16;  // key / value rows read ahead (a stream from DRAM)

// Accumulators a call keeps in registers: HC heads x V vectors <= 16.
constexpr int MaxHeadsForVecs(int v) { return v >= 16 ? 1 : std::min(4, 16 / v); }

template <typename S, typename C, int V, int HC>
void Scores(const float* q, const C* k_rows, long d, long t0, long t1, float* scores, long stride) {
  typename S::V qv[HC][V];
  for (int h = 0; h < HC; ++h)
    for (int v = 0; v < V; ++v) qv[h][v] = S::Load(q + h * d + S::kWidth * v);
  for (long t = t0; t < t1; ++t) {
    const C* kr = k_rows + t * d;
    for (long off = 0; off < d * static_cast<long>(sizeof(C)); off += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(kr + kPrefetchRows * d) + off, 0, 3);
    }
    typename S::V kv[V];
    for (int v = 0; v < V; ++v) kv[v] = S::Load(kr + S::kWidth * v);
    for (int h = 0; h < HC; ++h) {
      typename S::V acc = S::Mul(qv[h][0], kv[0]);
      for (int v = 1; v < V; ++v) acc = S::FmAdd(qv[h][v], kv[v], acc);
      scores[h * stride + t] = S::Sum(acc);
    }
  }
}

template <typename S, typename C, int V, int HC>
void Output(const float* p, long stride, const float* inv_sum, const C* v_rows, long d, long t0,
            long t1, float* out) {
  typename S::V acc[HC][V];
  for (int h = 0; h < HC; ++h)
    for (int v = 0; v < V; ++v) acc[h][v] = S::Zero();
  for (long t = t0; t < t1; ++t) {
    const C* vr = v_rows + t * d;
    for (long off = 0; off < d * static_cast<long>(sizeof(C)); off += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(vr + kPrefetchRows * d) + off, 0, 3);
    }
    typename S::V x[V];
    for (int v = 0; v < V; ++v) x[v] = S::Load(vr + S::kWidth * v);
    for (int h = 0; h < HC; ++h) {
      const typename S::V w = S::Set1(p[h * stride + t]);
      for (int v = 0; v < V; ++v) acc[h][v] = S::FmAdd(w, x[v], acc[h][v]);
    }
  }
  for (int h = 0; h < HC; ++h) {
    const typename S::V is = S::Set1(inv_sum[h]);
    for (int v = 0; v < V; ++v) S::Store(out + h * d + S::kWidth * v, S::Mul(acc[h][v], is));
  }
}

// Runtime (vectors per row, heads) to the template. V: d / kWidth, one of 1, 2, 3, 4, 6, 8, 12,
// 16 (d a multiple of 16 up to 256, for 8- or 16-lane vectors).
template <typename S, typename C, int V>
void ScoresH(long hc, const float* q, const C* k, long d, long t0, long t1, float* sc, long st) {
  constexpr int kMax = MaxHeadsForVecs(V);
  if constexpr (kMax >= 4) {
    if (hc == 4) return Scores<S, C, V, 4>(q, k, d, t0, t1, sc, st);
  }
  if constexpr (kMax >= 3) {
    if (hc == 3) return Scores<S, C, V, 3>(q, k, d, t0, t1, sc, st);
  }
  if constexpr (kMax >= 2) {
    if (hc == 2) return Scores<S, C, V, 2>(q, k, d, t0, t1, sc, st);
  }
  Scores<S, C, V, 1>(q, k, d, t0, t1, sc, st);
}

template <typename S, typename C, int V>
void OutputH(long hc, const float* p, long st, const float* is, const C* v, long d, long t0,
             long t1, float* out) {
  constexpr int kMax = MaxHeadsForVecs(V);
  if constexpr (kMax >= 4) {
    if (hc == 4) return Output<S, C, V, 4>(p, st, is, v, d, t0, t1, out);
  }
  if constexpr (kMax >= 3) {
    if (hc == 3) return Output<S, C, V, 3>(p, st, is, v, d, t0, t1, out);
  }
  if constexpr (kMax >= 2) {
    if (hc == 2) return Output<S, C, V, 2>(p, st, is, v, d, t0, t1, out);
  }
  Output<S, C, V, 1>(p, st, is, v, d, t0, t1, out);
}

template <typename S, typename C>
void ScoresAny(long hc, const float* q, const C* k, long d, long t0, long t1, float* sc, long st) {
  switch (d / S::kWidth) {
    case 1:
      return ScoresH<S, C, 1>(hc, q, k, d, t0, t1, sc, st);
    case 2:
      return ScoresH<S, C, 2>(hc, q, k, d, t0, t1, sc, st);
    case 3:
      return ScoresH<S, C, 3>(hc, q, k, d, t0, t1, sc, st);
    case 4:
      return ScoresH<S, C, 4>(hc, q, k, d, t0, t1, sc, st);
    case 6:
      return ScoresH<S, C, 6>(hc, q, k, d, t0, t1, sc, st);
    case 8:
      return ScoresH<S, C, 8>(hc, q, k, d, t0, t1, sc, st);
    case 12:
      return ScoresH<S, C, 12>(hc, q, k, d, t0, t1, sc, st);
    default:
      return ScoresH<S, C, 16>(hc, q, k, d, t0, t1, sc, st);
  }
}

template <typename S, typename C>
void OutputAny(long hc, const float* p, long st, const float* is, const C* v, long d, long t0,
               long t1, float* out) {
  switch (d / S::kWidth) {
    case 1:
      return OutputH<S, C, 1>(hc, p, st, is, v, d, t0, t1, out);
    case 2:
      return OutputH<S, C, 2>(hc, p, st, is, v, d, t0, t1, out);
    case 3:
      return OutputH<S, C, 3>(hc, p, st, is, v, d, t0, t1, out);
    case 4:
      return OutputH<S, C, 4>(hc, p, st, is, v, d, t0, t1, out);
    case 6:
      return OutputH<S, C, 6>(hc, p, st, is, v, d, t0, t1, out);
    case 8:
      return OutputH<S, C, 8>(hc, p, st, is, v, d, t0, t1, out);
    case 12:
      return OutputH<S, C, 12>(hc, p, st, is, v, d, t0, t1, out);
    default:
      return OutputH<S, C, 16>(hc, p, st, is, v, d, t0, t1, out);
  }
}

template <typename S>
long MaxHeads(long d) {
  switch (d / S::kWidth) {
    case 1:
      return MaxHeadsForVecs(1);
    case 2:
      return MaxHeadsForVecs(2);
    case 3:
      return MaxHeadsForVecs(3);
    case 4:
      return MaxHeadsForVecs(4);
    case 6:
      return MaxHeadsForVecs(6);
    case 8:
      return MaxHeadsForVecs(8);
    case 12:
      return MaxHeadsForVecs(12);
    default:
      return MaxHeadsForVecs(16);
  }
}

// e^x for x <= 0: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 split in two for exactness), e^r by
// a degree-6 Taylor polynomial, 2^n built in the exponent bits. x is clamped at -87 first, so
// 2^n stays a normal float (e^-87 ~ 1.6e-38: nothing against the max's 1).
template <typename S>
typename S::V Exp(typename S::V x) {
  x = S::Max(x, S::Set1(-87.f));
  const typename S::V n = S::Round(S::Mul(x, S::Set1(1.44269504088896341f)));
  typename S::V r = S::FnmAdd(n, S::Set1(0.693145751953125f), x);
  r = S::FnmAdd(n, S::Set1(1.428606765330187e-06f), r);
  typename S::V p = S::Set1(1.f / 720.f);
  p = S::FmAdd(p, r, S::Set1(1.f / 120.f));
  p = S::FmAdd(p, r, S::Set1(1.f / 24.f));
  p = S::FmAdd(p, r, S::Set1(1.f / 6.f));
  p = S::FmAdd(p, r, S::Set1(0.5f));
  p = S::FmAdd(p, r, S::Set1(1.f));
  p = S::FmAdd(p, r, S::Set1(1.f));
  return S::Mul(p, S::Pow2(n));
}

template <typename S>
float ExpSum(float* x, long n, float max) {
  const typename S::V vmax = S::Set1(max);
  typename S::V vsum = S::Zero();
  long i = 0;
  for (; i + S::kWidth <= n; i += S::kWidth) {
    const typename S::V e = Exp<S>(S::Sub(S::Load(x + i), vmax));
    S::Store(x + i, e);
    vsum = S::Add(vsum, e);
  }
  float sum = S::Sum(vsum);
  for (; i < n; ++i) {  // the tail, scalar
    x[i] = x[i] - max < -87.f ? 0.f : std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

template <typename S>
void ToF16(uint16_t* dst, const float* src, long d) {
  for (long i = 0; i < d; i += S::kWidth) S::StoreHalf(dst + i, S::Load(src + i));
}

template <typename S>
GqaKernels Make(const char* isa) {
  return GqaKernels{isa,
                    &MaxHeads<S>,
                    &ScoresAny<S, float>,
                    &ScoresAny<S, uint16_t>,
                    &OutputAny<S, float>,
                    &OutputAny<S, uint16_t>,
                    &ExpSum<S>,
                    &ToF16<S>};
}

}  // namespace ebb_cpu_ops::gqa_impl
