// Microbenchmarks of ebb's per-token and per-request pieces:
//   sampling (greedy, top-k, top-p; penalties, logit_bias, logprobs) over vocabularies of 32k,
//   128k and 200k;
//   KV growth and copy (a dynamic-mode KvCache growing through max_length);
//   statistics collection (ModelControls::Stats, /proc reads).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ebb/model.h"
#include "ebb/process_memory.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "generate/sampler.h"
#include "kv/kv_cache.h"
#include "kv/kv_pool.h"

namespace {

using ebb::internal::Sampler;
using ebb::internal::SamplerConfig;

std::vector<float> RandomLogits(int vocab) {
  std::mt19937 rng(42);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> v(vocab);
  for (float& x : v) x = n(rng);
  return v;
}

void RunSampler(benchmark::State& state, SamplerConfig cfg) {
  const auto base = RandomLogits(static_cast<int>(state.range(0)));
  std::vector<float> logits(base.size());
  const std::vector<int32_t> history = {1, 2, 3, 4, 5, 6, 7, 8};
  Sampler s(cfg);
  for (auto _ : state) {
    logits = base;  // the sampler modifies its input
    benchmark::DoNotOptimize(s.Sample(logits, history));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SampleGreedy(benchmark::State& state) { RunSampler(state, {}); }
void BM_SampleTopK50(benchmark::State& state) {
  RunSampler(state, {.do_sample = true, .top_k = 50, .temperature = 0.8f});
}
void BM_SampleTopP09(benchmark::State& state) {
  RunSampler(state, {.do_sample = true, .top_p = 0.9f, .temperature = 0.8f});
}
void BM_SampleTopKTopPPenalty(benchmark::State& state) {
  RunSampler(state, {.do_sample = true,
                     .top_k = 40,
                     .top_p = 0.95f,
                     .temperature = 0.7f,
                     .repetition_penalty = 1.1f});
}
// Issue 24: OpenAI's penalties (counts over the sampled tokens: a greedy run under a frequency
// penalty cycles through the top tokens, so the distinct set grows as in a real request),
// a logit_bias of 16 entries, and logprobs with the top 5 / 20, each on top of greedy.
void BM_SampleGreedyPresenceFrequency(benchmark::State& state) {
  RunSampler(state, {.presence_penalty = 0.5f, .frequency_penalty = 0.5f});
}
void BM_SampleGreedyLogitBias16(benchmark::State& state) {
  SamplerConfig c;
  for (int32_t i = 0; i < 16; ++i) c.logit_bias.emplace_back(i * 97, i % 2 ? -100.0f : 5.0f);
  RunSampler(state, c);
}
void BM_SampleGreedyLogprobsTop5(benchmark::State& state) {
  RunSampler(state, {.top_logprobs = 5});
}
void BM_SampleGreedyLogprobsTop20(benchmark::State& state) {
  RunSampler(state, {.top_logprobs = 20});
}

// The copy of the logits alone, to subtract from the above.
void BM_CopyLogitsOnly(benchmark::State& state) {
  const auto base = RandomLogits(static_cast<int>(state.range(0)));
  std::vector<float> logits(base.size());
  for (auto _ : state) {
    logits = base;
    benchmark::DoNotOptimize(logits.data());
  }
}

// A Phi-3.5-mini-shaped cache (32 layers, 32 KV heads of 96, fp32) for one sequence, growing in
// dynamic mode from 0 to max_length = range(0) tokens in chunks of 256: allocation + copy cost.
void BM_KvDynamicGrowth(benchmark::State& state) {
  ebb::internal::KvShape shape;
  shape.num_layers = 32;
  shape.kv_heads = 32;
  shape.head_size = 96;
  const int max_length = static_cast<int>(state.range(0));
  ebb::internal::KvPool pool(0, 0);
  for (auto _ : state) {
    auto cache = ebb::internal::KvCache::Create(pool, shape, /*shared=*/true, ebb::KvMode::kDynamic,
                                                max_length, 256);
    for (int t = 256; t <= max_length; t += 256) cache->Reserve(t);
    benchmark::DoNotOptimize(cache->bytes());
  }
  state.counters["final_MiB"] = static_cast<double>(shape.BytesPerToken()) * max_length / (1 << 20);
}

void BM_KvStaticReserve(benchmark::State& state) {
  ebb::internal::KvShape shape;
  shape.num_layers = 32;
  shape.kv_heads = 32;
  shape.head_size = 96;
  ebb::internal::KvPool pool(0, 0);
  for (auto _ : state) {
    auto cache = ebb::internal::KvCache::Create(pool, shape, true, ebb::KvMode::kStatic,
                                                static_cast<int>(state.range(0)), 256);
    benchmark::DoNotOptimize(cache->bytes());
  }
}

void BM_ReadProcessMemory(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ebb::ReadProcessMemory());
}

void BM_ModelMemoryStats(benchmark::State& state) {
  const char* dir = std::getenv("EBB_BENCH_MODEL");
  auto model = ebb::LoadModel(dir != nullptr ? dir : EBB_BINARY_DIR "/test-models/llama-tiny-fp32");
  for (auto _ : state) benchmark::DoNotOptimize(model->runtime().Stats());
}

}  // namespace

#define VOCABS ->Arg(32064)->Arg(128256)->Arg(200064)
BENCHMARK(BM_SampleGreedy) VOCABS;
BENCHMARK(BM_SampleTopK50) VOCABS;
BENCHMARK(BM_SampleTopP09) VOCABS;
BENCHMARK(BM_SampleTopKTopPPenalty) VOCABS;
BENCHMARK(BM_SampleGreedyPresenceFrequency) VOCABS;
BENCHMARK(BM_SampleGreedyLogitBias16) VOCABS;
BENCHMARK(BM_SampleGreedyLogprobsTop5) VOCABS;
BENCHMARK(BM_SampleGreedyLogprobsTop20) VOCABS;
BENCHMARK(BM_CopyLogitsOnly) VOCABS;
BENCHMARK(BM_KvDynamicGrowth)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KvStaticReserve)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadProcessMemory)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ModelMemoryStats)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
