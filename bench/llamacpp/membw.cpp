// bench/llamacpp/membw.cpp — the machine's read bandwidth, for the decode roofline in
// bench/vs_llamacpp.py (decode tok/s x bytes of weights read per token / bandwidth).
//
//   membw [--threads 2] [--mib 1024] [--repeats 5]
//
// Each of --threads threads sums its own contiguous share of one buffer of --mib MiB, a
// STREAM-like read-only kernel: 16 independent 64-bit accumulators per 128-byte step, which the
// compiler turns into full-width vector loads and adds (AVX-512: 2 zmm or 4 ymm, AVX2: 4 ymm) so
// that neither the adds nor the load width limit it. It must be built for the machine it runs
// on (CMakeLists.txt: -O3 -march=native, this target only): the SSE2-only build reads well below
// what the engines' AVX2/AVX-512 kernels stream, which inflates every "% of roofline". The buffer
// is written once first (so its pages exist). Prints the best pass of --repeats as one JSON line:
//   {"threads": T, "bytes": B, "best_s": S, "read_gb_s": B / S / 1e9, "checksum": C,
//    "build_flags": "<the flags it was compiled with>", "compiler": "<__VERSION__>",
//    "vector_isa": "avx512f" | "avx2" | "sse2" | "none"}
// vector_isa is the widest ISA the build enabled; on AVX-512 GCC's tuning may still choose
// 256-bit vectors (ymm), which stream the same: the loop is bound by memory, not by the adds.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#ifndef EBB_MEMBW_BUILD_FLAGS
#define EBB_MEMBW_BUILD_FLAGS "unknown"
#endif

namespace {

#if defined(__AVX512F__)
constexpr const char* kVectorIsa = "avx512f";
#elif defined(__AVX2__)
constexpr const char* kVectorIsa = "avx2";
#elif defined(__SSE2__)
constexpr const char* kVectorIsa = "sse2";
#else
constexpr const char* kVectorIsa = "none";
#endif

constexpr size_t kLanes = 16;  // accumulators: 128 bytes per step

// Sum of p[0, n): the lanes' inner loop has no dependency between iterations, so the compiler
// vectorizes it (check: -fopt-info-vec, or vpaddq in the disassembly).
uint64_t SumRange(const uint64_t* __restrict p, size_t n) {
  uint64_t acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) acc[l] += p[i + l];
  }
  uint64_t s = 0;
  for (; i < n; ++i) s += p[i];
  for (size_t l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 5;
  size_t mib = 1024;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "membw: %s needs a value\n", argv[i]);
      return 2;
    }
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (v < 1) {
      std::fprintf(stderr, "membw: %s needs a positive integer\n", argv[i]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--threads")) {
      threads = static_cast<int>(v);
    } else if (!std::strcmp(argv[i], "--mib")) {
      mib = static_cast<size_t>(v);
    } else if (!std::strcmp(argv[i], "--repeats")) {
      repeats = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "usage: membw [--threads 2] [--mib 1024] [--repeats 5]\n");
      return 2;
    }
  }
  const size_t n = (mib << 20) / sizeof(uint64_t);
  // 64-byte aligned, so that every thread's share starts on a cache line (mib << 20 is a
  // multiple of 64, as aligned_alloc requires).
  auto* buf = static_cast<uint64_t*>(std::aligned_alloc(64, n * sizeof(uint64_t)));
  if (!buf) {
    std::fprintf(stderr, "membw: could not allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) buf[i] = i;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        // Shares rounded to whole 128-byte steps; the last thread takes the remainder.
        const size_t step = n / threads / kLanes * kLanes;
        const size_t lo = step * t, hi = t == threads - 1 ? n : lo + step;
        sums[t] += SumRange(buf + lo, hi - lo);
      });
    }
    for (auto& th : pool) th.join();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  uint64_t check = 0;
  for (uint64_t s : sums) check += s;
  std::free(buf);
  const double bytes = static_cast<double>(n * sizeof(uint64_t));
  std::printf(
      "{\"threads\": %d, \"bytes\": %.0f, \"best_s\": %.6f, \"read_gb_s\": %.3f, \"checksum\": "
      "%llu, \"build_flags\": \"%s\", \"compiler\": \"%s\", \"vector_isa\": \"%s\"}\n",
      threads, bytes, best, bytes / best / 1e9, static_cast<unsigned long long>(check),
      EBB_MEMBW_BUILD_FLAGS, __VERSION__, kVectorIsa);
  return 0;
}
