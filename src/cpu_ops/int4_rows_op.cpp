// src/cpu_ops/int4_rows_op.cpp — ebb.cpu.MatMulNBits (int4_rows_op.h).
#include "int4_rows_op.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_ops.h"
#include "pack_file.h"
#include "pack_ledger.h"
#include "platform/vm.h"

namespace ebb_cpu_ops {
namespace {

constexpr const char* kOpType = "MatMulNBits";
constexpr long kGroup = 16;      // columns per 64-byte vector of the repacked layout (one per lane)
constexpr long kPair = 2;        // column groups per tile (32 columns)
constexpr long kTileM = 4;       // rows per tile
constexpr long kTaskGroups = 4;  // column groups per ParallelFor task (64 columns)
constexpr long kMaxUnit = 128;   // k per scale step: min(block_size, 128)
constexpr long kPrefetch = 2048;  // bytes ahead in each column group's stream, into L2

OrtStatus* Error(const std::string& what) { return OpError(kOpType, what); }

std::atomic<uint64_t> g_created[2];  // kernels created, by Int4Set (Int4KernelsCreated)

// The set a kernel created now runs: AVX-512 F/BW + VNNI where the CPU has them, else AVX2 + FMA
// (EBB_CPU_OPS_ISA=avx2 takes AVX2 on an AVX-512 CPU too: tests and comparisons), or none on a
// CPU with neither. Both read the same layout and compute the same integer dot products and the
// same float operations per column, so for finite A their Y is the same bit for bit
// (docs/cpu_ops.md "Numbers"). model/cpu_ops_rewrite.cpp CpuOpsIsasFor names the same choice
// from the CPU's flags (this library cannot depend on libebb's code).
std::optional<Int4Set> PickSet() {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (const char* isa = std::getenv("EBB_CPU_OPS_ISA"); isa && std::strcmp(isa, "avx2") == 0) {
    return avx2 ? std::optional(Int4Set::kAvx2) : std::nullopt;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni")) {
    return Int4Set::kAvx512Vnni;
  }
  return avx2 ? std::optional(Int4Set::kAvx2) : std::nullopt;
}

// The kernel's own copy of the layout (no pack file to map): one private anonymous mapping with
// page-aligned sections, so that it goes back to the operating system whole when the kernel goes,
// and a mapping the system refuses fails the kernel's creation with the reason (ORT then refuses
// the session, and ebb loads the graph on ORT's kernels: model/model.cpp CreateSourceSession).
class OwnedPack {
 public:
  OwnedPack() = default;
  OwnedPack(const OwnedPack&) = delete;
  OwnedPack& operator=(const OwnedPack&) = delete;
  ~OwnedPack() { Free(); }

  // Maps zero-filled sections of `bytes` each; returns their addresses. Throws std::runtime_error
  // naming the size and the system's error when the mapping is refused.
  std::vector<uint8_t*> Map(const std::vector<size_t>& bytes) {
    Free();
    const size_t page = static_cast<size_t>(ebb::platform::PageSize());
    std::vector<size_t> offsets;
    size_t total = 0;
    for (size_t b : bytes) {
      offsets.push_back(total);
      total += (b + page - 1) / page * page;
    }
    total = std::max(total, page);
    const ebb::platform::MapResult m = ebb::platform::MapAnonymous(total);
    if (!m.addr) {
      throw std::runtime_error("could not map " + std::to_string(total) +
                               " bytes for the repacked weights: " + std::strerror(m.err));
    }
    addr_ = m.addr;
    bytes_ = total;
    std::vector<uint8_t*> out;
    for (size_t o : offsets) out.push_back(static_cast<uint8_t*>(addr_) + o);
    return out;
  }
  size_t bytes() const { return bytes_; }  // mapped: the sections, each rounded up to pages
  void Free() {
    if (addr_) ebb::platform::Unmap(addr_, bytes_);
    addr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t bytes_ = 0;
};

// The weights, repacked at kernel creation for 16-column vectors (the op's own anonymous copy):
//   codes  [group][unit][step][64 bytes]: unit = `unit` k (min(block_size, 128)), step = 8 k;
//          byte 4L + t holds column 16 group + L: low nibble k = unit0 + 8 step + t, high nibble
//          k = unit0 + 8 step + 4 + t
//   scales [group][unit][16] float
//   zps    [group][unit][16] int32, only when the node has zero points (else 8 for all)
// Columns past N (the last pair of groups is padded) have code 0 and scale 0.
struct Packed {
  long n = 0, k = 0, block = 0, unit = 0, units = 0, groups = 0;
  bool has_zp = false;
  // The layout's three sections (codes, scales, zps; zps empty without zero points): in the
  // kernel's own memory (Pack) or in a mapped pack file (pack_file.h).
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  const uint8_t* zps = nullptr;
  OwnedPack owned;

  size_t UnitBytes() const { return static_cast<size_t>(unit / 8 * 64); }
  const uint8_t* Codes(long g, long u) const {
    return codes + (static_cast<size_t>(g * units + u)) * UnitBytes();
  }
  const float* Scales(long g, long u) const {
    return reinterpret_cast<const float*>(scales) + (g * units + u) * kGroup;
  }
  const int32_t* Zps(long g, long u) const {
    return reinterpret_cast<const int32_t*>(zps) + (g * units + u) * kGroup;
  }

  // Sets units and groups from n, k, block and unit; the sections' sizes in bytes.
  std::vector<size_t> Layout(bool zero_points) {
    const long blocks = (k + block - 1) / block;
    units = (blocks * block) / unit;
    groups = ((n + kGroup * kPair - 1) / (kGroup * kPair)) * kPair;
    has_zp = zero_points;
    const size_t cells = static_cast<size_t>(groups * units * kGroup);
    return {static_cast<size_t>(groups * units) * UnitBytes(), cells * sizeof(float),
            has_zp ? cells * sizeof(int32_t) : 0};
  }

  // Uses a pack file's sections instead of the kernel's own copy (which is freed).
  void UseMapped(const PackMapping& m) {
    codes = m.section(0);
    scales = m.section(1);
    zps = has_zp ? m.section(2) : nullptr;
    owned.Free();
  }

  // b: [N][blocks][block/2] as MatMulNBits holds it; sc: [N * blocks]; zp: [N][ceil(blocks/2)]
  // or null. Layout() first. Throws std::runtime_error when the system refuses the memory.
  void Pack(const uint8_t* b, const float* sc, const uint8_t* zp) {
    const long blocks = (k + block - 1) / block, col_bytes = blocks * block / 2;
    const long zp_stride = (blocks + 1) / 2;
    const std::vector<uint8_t*> sections = owned.Map(Layout(zp != nullptr));  // zero-filled
    codes = sections[0];
    scales = sections[1];
    zps = has_zp ? sections[2] : nullptr;
    auto code = [&](long col, long kk) {
      const uint8_t byte = b[col * col_bytes + kk / 2];
      return (kk & 1) ? byte >> 4 : byte & 0x0F;
    };
    for (long col = 0; col < n; ++col) {
      const long g = col / kGroup, lane = col % kGroup;
      for (long u = 0; u < units; ++u) {
        const long blk = u * unit / block;
        auto* out = const_cast<uint8_t*>(Codes(g, u));
        for (long st = 0; st < unit / 8; ++st) {
          for (long t = 0; t < 4; ++t) {
            const long k0 = u * unit + 8 * st + t;
            out[st * 64 + 4 * lane + t] =
                static_cast<uint8_t>(code(col, k0) | (code(col, k0 + 4) << 4));
          }
        }
        const_cast<float*>(Scales(g, u))[lane] = sc[col * blocks + blk];
        if (has_zp) {
          const uint8_t byte = zp[col * zp_stride + blk / 2];
          const_cast<int32_t*>(Zps(g, u))[lane] = (blk & 1) ? byte >> 4 : byte & 0x0F;
        }
      }
    }
  }
};

// GCC 12's AVX-512 cast and reduce intrinsics read a self-initialized `__Y = __Y` (their
// *_undefined_* helpers) and warn at every inlining site (GCC bug 105593, fixed in GCC 13): the
// code that uses them is compiled with those two warnings off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// A quantized for one call: per row, per unit, `unit` int8 codes in k order (a multiple of 64
// bytes apart: rows and units start 64-byte aligned), the unit's scale and the sum of its codes
// (for the zero-point term). Elements past K count as 0.
struct QuantA {
  long m = 0, units = 0, unit = 0, stride = 0;  // stride: bytes per unit, unit rounded up to 64
  Aligned q;
  std::vector<float> scale;   // [m][units]
  std::vector<int32_t> qsum;  // [m][units]

  // The scale comes from a whole block of A (`block` elements, as MLAS quantizes A per
  // block_size), the codes and sums are stored per unit (min(block, 128) elements).
  void Quantize(const float* a, long rows, long k, long unit_k, long nunits, long block,
                Int4Set isa) {
    m = rows;
    units = nunits;
    unit = unit_k;
    stride = (unit + 63) / 64 * 64;
    q.Reset(static_cast<size_t>(rows * units * stride));
    scale.assign(static_cast<size_t>(rows * units), 0.f);
    qsum.assign(static_cast<size_t>(rows * units), 0);
    const long per_block = block / unit;  // units per block (1 unless block > 128)
    for (long r = 0; r < rows; ++r) {
      for (long u0 = 0; u0 < units; u0 += per_block) {
        const long k0 = u0 * unit;
        const long block_len = std::max(0L, std::min(block, k - k0));
        const float amax = isa == Int4Set::kAvx2 ? MaxAbsAvx2(a + r * k + k0, block_len)
                                                 : MaxAbs(a + r * k + k0, block_len);
        for (long u = u0; u < u0 + per_block && u < units; ++u) {
          const long ku = u * unit, len = std::max(0L, std::min(unit, k - ku));
          const size_t i = static_cast<size_t>(r * units + u);
          scale[i] = amax / 127.f;
          int8_t* out = reinterpret_cast<int8_t*>(q.data) + (r * units + u) * stride;
          qsum[i] = isa == Int4Set::kAvx2 ? QuantizeUnitAvx2(a + r * k + ku, len, unit, amax, out)
                                          : QuantizeUnit(a + r * k + ku, len, unit, amax, out);
        }
      }
    }
  }

  // max |x[i]| over [0, len).
  __attribute__((target("avx512f,avx512bw"))) static float MaxAbs(const float* x, long len) {
    __m512 vmax = _mm512_setzero_ps();
    for (long i = 0; i < len; i += 16) {
      const auto mask = static_cast<__mmask16>(len - i >= 16 ? 0xFFFF : (1u << (len - i)) - 1u);
      vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(mask, x + i)));
    }
    return _mm512_reduce_max_ps(vmax);
  }

  // x[0 .. len) to out[0 .. unit) (zeros past len; unit is a multiple of 16) with scale amax / 127:
  // codes round(x / scale) to nearest even (the MXCSR default, as std::nearbyint). Returns their
  // sum.
  __attribute__((target("avx512f,avx512bw"))) static int32_t QuantizeUnit(const float* x, long len,
                                                                          long unit, float amax,
                                                                          int8_t* out) {
    const __m512 inv = _mm512_set1_ps(amax > 0.f ? 127.f / amax : 0.f);
    __m512i vsum = _mm512_setzero_si512();
    for (long i = 0; i < unit; i += 16) {
      const auto mask =
          static_cast<__mmask16>(len - i >= 16 ? 0xFFFF : (len > i ? (1u << (len - i)) - 1u : 0u));
      const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + i), inv));
      vsum = _mm512_add_epi32(vsum, v);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtsepi32_epi8(v));
    }
    return _mm512_reduce_add_epi32(vsum);
  }

  // The same two in 8 lanes (AVX2): the same maximum, codes and sum for finite x.
  __attribute__((target("avx2,fma"))) static __m256 LoadFirst(const float* x, long len) {
    if (len >= 8) return _mm256_loadu_ps(x);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::max(0L, len))),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(x, mask);
  }
  __attribute__((target("avx2,fma"))) static float MaxAbsAvx2(const float* x, long len) {
    const __m256 sign = _mm256_set1_ps(-0.f);
    __m256 vmax = _mm256_setzero_ps();
    for (long i = 0; i < len; i += 8) {
      vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, LoadFirst(x + i, len - i)));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  __attribute__((target("avx2,fma"))) static int32_t QuantizeUnitAvx2(const float* x, long len,
                                                                      long unit, float amax,
                                                                      int8_t* out) {
    const __m256 inv = _mm256_set1_ps(amax > 0.f ? 127.f / amax : 0.f);
    __m256i vsum = _mm256_setzero_si256();
    for (long i = 0; i < unit; i += 8) {
      const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(LoadFirst(x + i, len - i), inv));
      vsum = _mm256_add_epi32(vsum, v);
      // Saturating narrowing, as _mm512_cvtsepi32_epi8: int32 -> int16 -> int8, in order.
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_packs_epi16(w, w));
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(vsum), _mm256_extracti128_si256(vsum, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
  }
  const int8_t* Q(long r, long u) const {
    return reinterpret_cast<const int8_t*>(q.data) + (r * units + u) * stride;
  }
};

// Y[r0 .. r0+MR, 16 g0 .. 16 (g0 + 2)) for one tile: two 16-column groups by MR rows. Per unit
// and 8 k, each group's 64 bytes are loaded and unpacked once (low nibbles: k + 0..3, high: k +
// 4..7, lane L = column L) and multiplied by each row's 4 int8 (a broadcast dword) with vpdpbusd;
// separate low/high accumulators keep 4 MR independent chains. Per unit: the int32 sums start at
// -zp * sum(qa) (the zero-point term), are converted and scaled by sb (16 columns) * sa.
//
// no-tree-pre (GCC): with partial redundancy elimination on, GCC 12 gave the 3- and 4-row loops
// 13-18 vector register copies and stack spills per 8 k beside their 12-16 vpdpbusd (the
// accumulators rotated between registers every iteration; objdump of the loop); without it each
// loop is loads, unpacking, broadcasts and vpdpbusd only. The arithmetic is unchanged.
#if defined(__GNUC__) && !defined(__clang__)
#define EBB_TILE_ATTRS target("avx512f,avx512bw,avx512vnni"), optimize("no-tree-pre")
#else
#define EBB_TILE_ATTRS target("avx512f,avx512bw,avx512vnni")
#endif
template <int MR>
__attribute__((EBB_TILE_ATTRS)) void Tile(const Packed& w, const QuantA& qa, long r0, long g0,
                                          float* y) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[MR][kPair];
  for (int r = 0; r < MR; ++r)
    for (int g = 0; g < kPair; ++g) acc[r][g] = _mm512_setzero_ps();
  const long steps = w.unit / 8;
  for (long u = 0; u < w.units; ++u) {
    __m512i lo_acc[MR][kPair], hi_acc[MR][kPair];
    for (int r = 0; r < MR; ++r) {
      const int32_t qs = qa.qsum[static_cast<size_t>((r0 + r) * qa.units + u)];
      for (int g = 0; g < kPair; ++g) {
        lo_acc[r][g] = w.has_zp ? _mm512_mullo_epi32(_mm512_load_si512(w.Zps(g0 + g, u)),
                                                     _mm512_set1_epi32(-qs))
                                : _mm512_set1_epi32(-8 * qs);
        hi_acc[r][g] = _mm512_setzero_si512();
      }
    }
    const uint8_t* b0 = w.Codes(g0, u);
    const uint8_t* b1 = w.Codes(g0 + 1, u);
    const int8_t* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = qa.Q(r0 + r, u);
    for (long st = 0; st < steps; ++st) {
      _mm_prefetch(reinterpret_cast<const char*>(b0 + st * 64 + kPrefetch), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(b1 + st * 64 + kPrefetch), _MM_HINT_T1);
      const __m512i raw0 = _mm512_load_si512(b0 + st * 64);
      const __m512i raw1 = _mm512_load_si512(b1 + st * 64);
      const __m512i lo0 = _mm512_and_si512(raw0, low4);
      const __m512i hi0 = _mm512_and_si512(_mm512_srli_epi16(raw0, 4), low4);
      const __m512i lo1 = _mm512_and_si512(raw1, low4);
      const __m512i hi1 = _mm512_and_si512(_mm512_srli_epi16(raw1, 4), low4);
      for (int r = 0; r < MR; ++r) {
        int32_t alo, ahi;
        std::memcpy(&alo, a[r] + st * 8, 4);
        std::memcpy(&ahi, a[r] + st * 8 + 4, 4);
        const __m512i vlo = _mm512_set1_epi32(alo), vhi = _mm512_set1_epi32(ahi);
        lo_acc[r][0] = _mm512_dpbusd_epi32(lo_acc[r][0], lo0, vlo);
        hi_acc[r][0] = _mm512_dpbusd_epi32(hi_acc[r][0], hi0, vhi);
        lo_acc[r][1] = _mm512_dpbusd_epi32(lo_acc[r][1], lo1, vlo);
        hi_acc[r][1] = _mm512_dpbusd_epi32(hi_acc[r][1], hi1, vhi);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m512 sa = _mm512_set1_ps(qa.scale[static_cast<size_t>((r0 + r) * qa.units + u)]);
      for (int g = 0; g < kPair; ++g) {
        const __m512i d = _mm512_add_epi32(lo_acc[r][g], hi_acc[r][g]);
        const __m512 s = _mm512_mul_ps(_mm512_load_ps(w.Scales(g0 + g, u)), sa);
        acc[r][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[r][g]);
      }
    }
  }
  for (int g = 0; g < kPair; ++g) {
    const long col0 = (g0 + g) * kGroup;
    if (col0 >= w.n) break;
    const long valid = std::min(kGroup, w.n - col0);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    for (int r = 0; r < MR; ++r) _mm512_mask_storeu_ps(y + (r0 + r) * w.n + col0, mask, acc[r][g]);
  }
}

// The same tile in AVX2 + FMA, for one 16-column group g (its two 8-column halves, h = 0, 1:
// bytes 32 h .. 32 h + 31 of each 64-byte step) by MR rows. Without VNNI the u8 x s8 dot products
// of 4 k are vpmaddubsw (pairs to int16, which cannot saturate: 2 * 15 * 128) then vpmaddwd by 1
// (int16 pairs to int32); the int16 sums of 4 steps (32 k) are added before widening: each step's
// term is at most 4 * 15 * 128 = 7,680 in magnitude, so 4 of them fit int16 exactly. The integer
// result per column is the VNNI tile's exactly, and the float steps are the same, so Y is the
// same bits. With up to 2 rows both halves go in one pass over the unit; with 3 or 4, each half
// is its own pass (the unit, 1 KiB at unit 128, is in L1 for the second), which halves the
// int16 and int32 accumulators and unpacked codes live in the inner loop (16 ymm registers).
template <int MR>
__attribute__((target("avx2,fma"))) void TileAvx2(const Packed& w, const QuantA& qa, long r0,
                                                  long g, float* y) {
  constexpr int kHalves = MR <= 2 ? 2 : 1;  // halves per pass
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const long steps = w.unit / 8;  // a multiple of 4: unit is a power of two from 32
  for (long u = 0; u < w.units; ++u) {
    const uint8_t* b = w.Codes(g, u);
    const int8_t* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = qa.Q(r0 + r, u);
    for (int h0 = 0; h0 < 2; h0 += kHalves) {
      __m256i iacc[MR][kHalves];
      for (int r = 0; r < MR; ++r) {
        const int32_t qs = qa.qsum[static_cast<size_t>((r0 + r) * qa.units + u)];
        for (int h = 0; h < kHalves; ++h) {
          iacc[r][h] = w.has_zp
                           ? _mm256_mullo_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(
                                                    w.Zps(g, u) + 8 * (h0 + h))),
                                                _mm256_set1_epi32(-qs))
                           : _mm256_set1_epi32(-8 * qs);
        }
      }
      for (long st0 = 0; st0 < steps; st0 += 4) {
        __m256i part[MR][kHalves];
        for (int r = 0; r < MR; ++r)
          for (int h = 0; h < kHalves; ++h) part[r][h] = _mm256_setzero_si256();
        for (long st = st0; st < st0 + 4; ++st) {
          if (h0 == 0)
            _mm_prefetch(reinterpret_cast<const char*>(b + st * 64 + kPrefetch), _MM_HINT_T1);
          __m256i lo[kHalves], hi[kHalves];
          for (int h = 0; h < kHalves; ++h) {
            const __m256i raw =
                _mm256_load_si256(reinterpret_cast<const __m256i*>(b + st * 64 + 32 * (h0 + h)));
            lo[h] = _mm256_and_si256(raw, low4);
            hi[h] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
          }
          for (int r = 0; r < MR; ++r) {
            int32_t alo, ahi;
            std::memcpy(&alo, a[r] + st * 8, 4);
            std::memcpy(&ahi, a[r] + st * 8 + 4, 4);
            const __m256i vlo = _mm256_set1_epi32(alo), vhi = _mm256_set1_epi32(ahi);
            for (int h = 0; h < kHalves; ++h) {
              const __m256i d = _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], vlo),
                                                 _mm256_maddubs_epi16(hi[h], vhi));
              part[r][h] = _mm256_add_epi16(part[r][h], d);
            }
          }
        }
        for (int r = 0; r < MR; ++r) {
          for (int h = 0; h < kHalves; ++h) {
            iacc[r][h] = _mm256_add_epi32(iacc[r][h], _mm256_madd_epi16(part[r][h], ones));
          }
        }
      }
      for (int h = 0; h < kHalves; ++h) {
        const __m256 sb = _mm256_load_ps(w.Scales(g, u) + 8 * (h0 + h));
        for (int r = 0; r < MR; ++r) {
          const __m256 sa = _mm256_set1_ps(qa.scale[static_cast<size_t>((r0 + r) * qa.units + u)]);
          acc[r][h0 + h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc[r][h]), _mm256_mul_ps(sb, sa),
                                           acc[r][h0 + h]);
        }
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const long col0 = g * kGroup + 8 * h;
    if (col0 >= w.n) break;
    const long valid = std::min(8L, w.n - col0);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int r = 0; r < MR; ++r) _mm256_maskstore_ps(y + (r0 + r) * w.n + col0, mask, acc[r][h]);
  }
}

#pragma GCC diagnostic pop
#undef EBB_TILE_ATTRS

// The rows [r0, r0 + MR) of one tile of the set `isa`: AVX2 tiles are one 16-column group (g),
// AVX-512 VNNI tiles two (g, g + 1).
template <int MR>
void IsaTile(Int4Set isa, const Packed& w, const QuantA& qa, long r0, long g, float* y) {
  if (isa == Int4Set::kAvx2) {
    TileAvx2<MR>(w, qa, r0, g, y);
  } else {
    Tile<MR>(w, qa, r0, g, y);
  }
}

void Rows(Int4Set isa, const Packed& w, const QuantA& qa, long r0, long rows, long g, float* y) {
  switch (rows) {
    case 1:
      IsaTile<1>(isa, w, qa, r0, g, y);
      break;
    case 2:
      IsaTile<2>(isa, w, qa, r0, g, y);
      break;
    case 3:
      IsaTile<3>(isa, w, qa, r0, g, y);
      break;
    default:
      IsaTile<4>(isa, w, qa, r0, g, y);
      break;
  }
}

struct Call {
  const Packed* w;
  const QuantA* qa;
  float* y;
  Int4Set isa;
};

// Task t: column groups [t * kTaskGroups, ...) for every row, 4 rows at a time.
void Task(void* user, size_t t) {
  const Call& c = *static_cast<const Call*>(user);
  const long begin = static_cast<long>(t) * kTaskGroups;
  const long end = std::min(c.w->groups, begin + kTaskGroups);
  // An AVX2 tile is one group, so the padding group past N (when N rounds up to an odd number of
  // groups) is not computed; an AVX-512 tile computes both of its groups.
  const bool avx2 = c.isa == Int4Set::kAvx2;
  const long groups_per_tile = avx2 ? 1 : kPair;
  const long last = avx2 ? std::min(end, (c.w->n + kGroup - 1) / kGroup) : end;
  for (long r0 = 0; r0 < c.qa->m; r0 += kTileM) {
    const long rows = std::min(kTileM, c.qa->m - r0);
    for (long g = begin; g < last; g += groups_per_tile) Rows(c.isa, *c.w, *c.qa, r0, rows, g, c.y);
  }
}

struct Kernel {
  Packed w;
  std::unique_ptr<PackMapping> mapping;  // the pack file w's sections are in, if any
  bool unpacked = false;                 // kNoPackKey: a session that never runs
  Int4Set isa = Int4Set::kAvx512Vnni;    // PickSet() at creation
  // The load's count of anonymous packs (pack_ledger.h), and what this kernel added to it: its
  // own copy's bytes, taken back when the kernel goes.
  PackCount ledger;
  uint64_t counted = 0;

  Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() {
    if (ledger) ledger->fetch_sub(counted);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    if (unpacked) {
      return Error("this session was created with " + std::string(kNoPackKey) +
                   "=1 (it only writes the optimised graph) and cannot run");
    }
    try {
      Ort::KernelContext ctx(context);
      Ort::ConstValue a = ctx.GetInput(0);
      std::vector<int64_t> shape = a.GetTensorTypeAndShapeInfo().GetShape();
      if (shape.empty() || shape.back() != w.k) {
        return Error("A's last dimension must be K = " + std::to_string(w.k));
      }
      long m = 1;
      for (size_t d = 0; d + 1 < shape.size(); ++d) m *= static_cast<long>(shape[d]);
      shape.back() = w.n;
      Ort::UnownedValue y = ctx.GetOutput(0, shape);
      if (m == 0) return nullptr;
      thread_local QuantA qa;  // per calling thread: reused across calls, never shared
      qa.Quantize(a.GetTensorData<float>(), m, w.k, w.unit, w.units, w.block, isa);
      Call c{&w, &qa, y.GetTensorMutableData<float>(), isa};
      const size_t tasks = static_cast<size_t>((w.groups + kTaskGroups - 1) / kTaskGroups);
      Ort::ThrowOnError(g_api->KernelContext_ParallelFor(context, &Task, tasks, 0, &c));
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }
};

// Input i of the node as a constant initializer's data, or null (with `why` set).
template <typename T>
const T* ConstantInput(const Ort::ConstKernelInfo& ki, size_t i, ONNXTensorElementDataType type,
                       size_t want, const char* name, std::string& why) {
  int is_constant = 0;
  Ort::ConstValue v = ki.GetTensorConstantInput(i, &is_constant);
  if (!is_constant || !static_cast<const OrtValue*>(v)) {
    why = std::string(name) + " must be a constant initializer (it is repacked at kernel creation)";
    return nullptr;
  }
  Ort::TensorTypeAndShapeInfo info = v.GetTensorTypeAndShapeInfo();
  if (info.GetElementType() != type || info.GetElementCount() != want) {
    why = std::string(name) + " must hold " + std::to_string(want) + " elements of the type " +
          "MatMulNBits gives it";
    return nullptr;
  }
  return v.GetTensorData<T>();
}

struct MatMulNBitsOp : Ort::CustomOpBase<MatMulNBitsOp, Kernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** out) const {
    try {
      const std::optional<Int4Set> isa = PickSet();
      if (!isa) {
        return Error(
            "this CPU has neither AVX-512 F/BW/VNNI nor AVX2 + FMA, which the kernel needs; run "
            "the model's original folder (com.microsoft MatMulNBits) instead");
      }
      Ort::ConstKernelInfo ki(info);
      auto kernel = std::make_unique<Kernel>();
      kernel->isa = *isa;
      g_created[static_cast<int>(*isa)].fetch_add(1, std::memory_order_relaxed);
      Packed& w = kernel->w;
      w.k = static_cast<long>(ki.GetAttribute<int64_t>("K"));
      w.n = static_cast<long>(ki.GetAttribute<int64_t>("N"));
      w.block = static_cast<long>(ki.GetAttribute<int64_t>("block_size"));
      const long bits = static_cast<long>(ki.GetAttribute<int64_t>("bits"));
      const std::string node = "node '" + ki.GetNodeName() + "': ";
      if (bits != 4 || w.k <= 0 || w.n <= 0 || w.block < 32 || (w.block & (w.block - 1))) {
        return Error(node +
                     "needs bits 4, positive K and N and a block_size that is a power of "
                     "two from 32; got bits " +
                     std::to_string(bits) + ", K " + std::to_string(w.k) + ", N " +
                     std::to_string(w.n) + ", block_size " + std::to_string(w.block));
      }
      w.unit = std::min(w.block, kMaxUnit);
      const long blocks = (w.k + w.block - 1) / w.block;
      std::string why;
      const auto* b =
          ConstantInput<uint8_t>(ki, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
                                 static_cast<size_t>(w.n * blocks * w.block / 2), "B", why);
      const auto* sc = b ? ConstantInput<float>(ki, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                                static_cast<size_t>(w.n * blocks), "scales", why)
                         : nullptr;
      const uint8_t* zp = nullptr;
      if (sc && ki.GetInputCount() > 3) {
        zp = ConstantInput<uint8_t>(ki, 3, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
                                    static_cast<size_t>(w.n * ((blocks + 1) / 2)), "zero_points",
                                    why);
        if (!zp) return Error(node + why);
      }
      if (!sc) return Error(node + why);
      const PackSettings settings = ReadPackSettings(api, info);
      if (settings.skip) {
        w.Layout(zp != nullptr);
        kernel->unpacked = true;
        *out = kernel.release();
        return nullptr;
      }
      // A pack file (pack_file.h): the layout's shape and a sample of B, the scales and the zero
      // points identify it; the sample reads two pages of each, not the weights.
      const size_t b_bytes = static_cast<size_t>(w.n * blocks * w.block / 2);
      const size_t sc_bytes = static_cast<size_t>(w.n * blocks) * sizeof(float);
      const size_t zp_bytes = zp ? static_cast<size_t>(w.n * ((blocks + 1) / 2)) : 0;
      const PackKey key{{w.n, w.k, w.block, w.unit, zp != nullptr ? 1 : 0},
                        SampleHash({{b, b_bytes}, {sc, sc_bytes}, {zp, zp_bytes}})};
      const std::string path = settings.dir.empty() ? "" : PackPath(settings.dir, ki.GetNodeName());
      const std::vector<size_t> sizes = w.Layout(zp != nullptr);
      if (!path.empty()) kernel->mapping = OpenPack(path, key, sizes);
      if (kernel->mapping) {
        w.UseMapped(*kernel->mapping);
      } else {
        try {
          w.Pack(b, sc, zp);
        } catch (const std::exception& e) {
          return Error(node + e.what());
        }
        if (!path.empty() && settings.write &&
            WritePack(path, key, {{w.codes, sizes[0]}, {w.scales, sizes[1]}, {w.zps, sizes[2]}})
                .empty()) {
          // Run from the file from now on: what the session computes is what a later load reads.
          kernel->mapping = OpenPack(path, key, sizes);
          if (kernel->mapping) w.UseMapped(*kernel->mapping);
        }
      }
      if (!kernel->mapping && (kernel->ledger = PackLedger::Find(settings.ledger))) {
        kernel->counted = w.owned.bytes();
        kernel->ledger->fetch_add(kernel->counted);
      }
      *out = kernel.release();
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }

  const char* GetName() const { return kOpType; }
  size_t GetInputTypeCount() const { return 4; }
  ONNXTensorElementDataType GetInputType(size_t i) const {
    return i == 0 || i == 2 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
                            : ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t i) const {
    return i == 3 ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
};

}  // namespace

const OrtCustomOp* Int4RowsOp() {
  static MatMulNBitsOp op;
  return &op;
}

uint64_t Int4KernelsCreated(Int4Set set) {
  return g_created[static_cast<int>(set)].load(std::memory_order_relaxed);
}

}  // namespace ebb_cpu_ops
