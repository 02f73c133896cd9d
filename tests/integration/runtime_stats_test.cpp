// Issue 22 item 6 on real models: Runtime::Stats() carries memory.limit and what it counts, read
// in one step (used = weights + KV in use); a model's MemoryStats carries its own share and its
// pool's full KvStats (the one KV struct: kv_stats(), MemoryStats::kv and ModelSummary::kv
// agree), and the text forms carry the same figures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/runtime.h"
#include "test_env.h"

namespace ebb {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(RuntimeStats, CarryTheLimitAndWhatItCountsInOnePlace) {
  Runtime rt;
  rt.SetMemoryLimit(512 * kMiB);
  auto a = rt.Load("a", testing::TestModelsDir() / "llama-tiny-fp32");
  auto b = rt.Load("b", testing::TestModelsDir() / "gpt2-tiny-fp32");
  Generator live(b, GeneratorParams{.max_length = 32});
  live.AppendTokens(std::vector<int32_t>{5, 17, 42});

  const MemoryStats s = rt.Stats();
  EXPECT_EQ(s.limit_bytes, 512 * kMiB);
  EXPECT_EQ(s.limit_bytes, rt.memory_limit());
  EXPECT_EQ(s.weights_bytes, a->weights_bytes() + b->weights_bytes());
  EXPECT_GT(s.kv.in_use_bytes, 0u);
  EXPECT_EQ(s.used_bytes, s.weights_bytes + s.kv.in_use_bytes);

  const MemoryStats mb = b->runtime().Stats();
  EXPECT_EQ(mb.limit_bytes, 512 * kMiB) << "a model reports its runtime's limit";
  EXPECT_EQ(mb.used_bytes, b->weights_bytes() + mb.kv.in_use_bytes) << "its own share";
  const MemoryStats ma = a->runtime().Stats();
  EXPECT_EQ(ma.used_bytes, a->weights_bytes()) << "no KV in use";
  EXPECT_EQ(ma.used_bytes + mb.used_bytes, s.used_bytes) << "the shares sum to the runtime's";

  const KvStats k = b->kv_stats();
  EXPECT_EQ(mb.kv.in_use_bytes, k.in_use_bytes);
  EXPECT_EQ(mb.kv.num_allocations, k.num_allocations);
  EXPECT_GT(k.num_allocations, 0u);
  EXPECT_EQ(k.reserved_bytes, k.in_use_bytes + k.retained_bytes);
  const auto list = rt.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].kv.num_allocations, k.num_allocations);
  EXPECT_EQ(list[1].kv.max_bytes, k.max_bytes);

  // The text forms carry the same figures under the structs' names.
  const auto j = nlohmann::json::parse(ToJson(s));
  EXPECT_EQ(j["limit_bytes"], s.limit_bytes);
  EXPECT_EQ(j["used_bytes"], s.used_bytes);
  const auto jl = nlohmann::json::parse(ToJson(list));
  EXPECT_EQ(jl[1]["kv"]["num_allocations"], k.num_allocations);
  EXPECT_EQ(jl[1]["kv"]["retained_bytes"], k.retained_bytes);
  const auto jm = nlohmann::json::parse(ToJson(mb));
  EXPECT_EQ(jm["used_bytes"], mb.used_bytes);
  EXPECT_EQ(jm["kv"]["num_allocations"], k.num_allocations);
}

// Unloading releases the model's weights from what memory.limit counts.
TEST(RuntimeStats, UnloadTakesTheWeightsOutOfUsed) {
  Runtime rt;
  auto a = rt.Load("a", testing::TestModelsDir() / "llama-tiny-fp32");
  const uint64_t w = a->weights_bytes();
  EXPECT_EQ(rt.Stats().used_bytes, w);
  EXPECT_EQ(rt.Stats().limit_bytes, 0u) << "no memory.limit";
  a.reset();
  rt.Unload("a");
  EXPECT_EQ(rt.Stats().used_bytes, 0u);
  EXPECT_EQ(rt.Stats().weights_bytes, 0u);
}

}  // namespace
}  // namespace ebb
