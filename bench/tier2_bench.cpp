// Tier 2 memory benchmark (issue 4): one setting per process, N mixed requests, then peak RSS,
// final RSS and request latency percentiles. Run every setting back to back with
// bench/tier2_bench.sh so the figures are side by side.
//
//   tier2_bench MODEL_DIR SETTING [REQUESTS]
//   SETTING: ort-defaults | arena-off | same-as-requested | shrink-every-10 |
//            shrink-after-next-every-50 | reload-every-50 | ebb-defaults
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/process_memory.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"

namespace {

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR SETTING [REQUESTS]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], setting = argv[2];
  const int requests = argc > 3 ? std::atoi(argv[3]) : 500;
  ebb::ModelOptions o;
  if (setting == "ort-defaults") {
    o.Set("session_options.enable_mem_pattern", "1");  // ORT's own default
  } else if (setting == "arena-off") {
    o.Set("session_options.enable_cpu_mem_arena", "0");
  } else if (setting == "same-as-requested") {
    o.Set("session_options.arena_extend_strategy", "kSameAsRequested");
  } else if (setting == "shrink-every-10") {
    o.Set("memory.shrink_every", "10");
  } else if (setting != "shrink-after-next-every-50" && setting != "reload-every-50" &&
             setting != "ebb-defaults") {
    std::fprintf(stderr, "unknown setting %s\n", setting.c_str());
    return 2;
  }
  auto model = ebb::LoadModel(dir, o);
  const int vocab = model->info().vocab_size;
  // Mixed prompt lengths 16..2047 (a shuffled cycle of 100), 8 generated tokens each.
  std::vector<int> lengths(100);
  for (int i = 0; i < 100; ++i) lengths[i] = 16 + i * (2047 - 16) / 99;
  uint64_t x = 12345;
  for (int i = 99; i > 0; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(lengths[i], lengths[static_cast<int>((x >> 33) % (i + 1))]);
  }
  std::vector<double> latency_ms;
  for (int r = 0; r < requests; ++r) {
    if (setting == "reload-every-50" && r > 0 && r % 50 == 0) {
      model.reset();  // the users' workaround: unload, then load again
      model = ebb::LoadModel(dir, o);
    }
    if (setting == "shrink-after-next-every-50" && r % 50 == 49) {
      model->runtime().ShrinkAfterNextRun();
    }
    const int len = lengths[r % 100];
    std::vector<int32_t> prompt(len);
    for (int i = 0; i < len; ++i) prompt[i] = (i * 37 + r) % vocab;
    const auto t0 = std::chrono::steady_clock::now();
    {
      ebb::GeneratorParams p;
      p.max_length = len + 8;
      ebb::Generator g(model, p);
      g.AppendTokens(prompt);
      while (!g.done()) g.GenerateNextToken();
    }
    latency_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const ebb::ProcessMemory pm = ebb::ReadProcessMemory();
  std::printf(
      "%-28s requests %d  peak_rss %7.1f MiB  final_rss %7.1f MiB  p50 %7.1f ms  p99 "
      "%7.1f ms  shrinks %llu\n",
      setting.c_str(), requests, pm.peak_rss_bytes / 1048576.0, pm.rss_bytes / 1048576.0,
      Percentile(latency_ms, 0.5), Percentile(latency_ms, 0.99),
      static_cast<unsigned long long>(model->runtime().Stats().num_shrinks));
  return 0;
}
