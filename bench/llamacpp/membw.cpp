// bench/llamacpp/membw.cpp — the machine's read bandwidth, for the decode roofline in
// bench/vs_llamacpp.py (decode tok/s x bytes of weights read per token / bandwidth).
//
//   membw [--threads 2] [--mib 1024] [--repeats 5]
//
// Each of --threads threads sums its own contiguous share of one buffer of --mib MiB (64-bit
// loads, 4 independent accumulators so the adds do not limit it; the compiler vectorizes it at
// -O2/-O3). The buffer is written once first (so its pages exist). Prints the best pass of
// --repeats as JSON: {"threads": T, "bytes": B, "best_s": S, "read_gb_s": B / S / 1e9}.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

uint64_t SumRange(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 5;
  size_t mib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
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
  std::vector<uint64_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = i;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        sums[t] += SumRange(buf.data() + lo, hi - lo);
      });
    }
    for (auto& th : pool) th.join();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  uint64_t check = 0;
  for (uint64_t s : sums) check += s;
  const double bytes = static_cast<double>(n * sizeof(uint64_t));
  std::printf(
      "{\"threads\": %d, \"bytes\": %.0f, \"best_s\": %.6f, \"read_gb_s\": %.3f, \"checksum\": "
      "%llu}\n",
      threads, bytes, best, bytes / best / 1e9, static_cast<unsigned long long>(check));
  return 0;
}
