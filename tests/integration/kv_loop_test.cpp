// The loop users reported against onnxruntime-genai: model and params alive, a generator
// created, run to max_length and destroyed, again and again. In ebb memory must stay flat.
//
// Default suite: EBB_KV_LOOP_ITERATIONS (default 12) iterations per KV mode on the
// `llama-kvloop` test model (32 layers, 32 KiB of KV per token: 16 MiB per generator at 512).
// The `soak` label (kv_loop_soak_200) runs 200 iterations per mode on EBB_KV_LOOP_MODEL=
// llama-kvloop64: 128 KiB of KV per token, 64 MiB per generator.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "test_env.h"

namespace ebb {
namespace {

// Resident set size of this process in bytes, from /proc/self/status (VmRSS).
int64_t RssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

int Iterations() {
  const char* v = std::getenv("EBB_KV_LOOP_ITERATIONS");
  return v != nullptr ? std::max(6, std::atoi(v)) : 12;
}

TEST(KvLoop, CreateRunDestroyLoopKeepsMemoryFlat) {
  constexpr int64_t kMiB = 1 << 20;
  const int iterations = Iterations();
  for (KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
    ModelOptions mo;
    mo.kv_mode = mode;
    const char* name = std::getenv("EBB_KV_LOOP_MODEL");
    auto model =
        ebb::LoadModel(testing::TestModelsDir() / (name != nullptr ? name : "llama-kvloop"), mo);
    GeneratorParams params;  // kept alive across iterations, as in the reported loop
    params.max_length = 512;
    std::vector<int32_t> prompt(128);
    for (int i = 0; i < 128; ++i) prompt[i] = (i * 37 + 11) % model->info().vocab_size;
    int64_t rss_at_5 = 0, rss_last = 0;
    for (int it = 1; it <= iterations; ++it) {
      const int64_t before = RssBytes();
      {
        Generator g(model, params);
        g.AppendTokens(prompt);
        while (!g.done()) g.GenerateNextToken();
        ASSERT_EQ(g.sequence(0).size(), 512u);
        ASSERT_GE(g.Stats().kv_bytes, 512 * model->info().kv_bytes_per_token);
      }
      const int64_t after = RssBytes();
      ASSERT_EQ(model->kv_stats().in_use_bytes, 0u) << "iteration " << it;
      if (it > 1) {  // the first iteration warms ORT's arena and thread pool
        EXPECT_LE(after - before, 4 * kMiB)
            << KvModeName(mode) << " iteration " << it << ": RSS grew across create/destroy";
      }
      if (it == 5) rss_at_5 = after;
      rss_last = after;
    }
    std::printf("%s: RSS after iteration 5 %lld KiB, after iteration %d %lld KiB\n",
                std::string(KvModeName(mode)).c_str(), static_cast<long long>(rss_at_5 / 1024),
                iterations, static_cast<long long>(rss_last / 1024));
    EXPECT_LE(rss_last - rss_at_5, 4 * kMiB)
        << KvModeName(mode) << ": RSS at iteration " << iterations << " vs iteration 5";
    EXPECT_EQ(model->kv_stats().reserved_bytes, 0u);
  }
}

}  // namespace
}  // namespace ebb
