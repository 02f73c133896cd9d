// The JSON values of ebb's figures (src/runtime/stats_json.h): every struct field is named once,
// the public text forms are those values' dumps (no second builder), and memory.limit's count
// (used = weights + KV in use) is one function that the governor's admission agrees with.
#include "runtime/stats_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "memory/memory_governor.h"

namespace ebb::internal {
namespace {

TEST(StatsJson, KvStatsNamesEveryFieldOfTheOneKvStruct) {
  KvStats kv;
  kv.in_use_bytes = 1;
  kv.retained_bytes = 2;
  kv.reserved_bytes = 3;
  kv.peak_in_use_bytes = 4;
  kv.max_bytes = 5;
  kv.retain_limit_bytes = 6;
  kv.num_allocations = 7;
  kv.num_os_maps = 8;
  kv.num_refusals = 9;
  const StatsJson j = KvStatsJson(kv);
  const StatsJson want = {
      {"in_use_bytes", 1},      {"retained_bytes", 2}, {"reserved_bytes", 3},
      {"peak_in_use_bytes", 4}, {"max_bytes", 5},      {"retain_limit_bytes", 6},
      {"num_allocations", 7},   {"num_os_maps", 8},    {"num_refusals", 9}};
  EXPECT_EQ(j, want);
  // Nine uint64_t fields: a field added to KvStats without a name here fails this.
  static_assert(sizeof(KvStats) == 9 * sizeof(uint64_t));
}

TEST(StatsJson, MemoryStatsCarriesTheLimitAndWhatItCounts) {
  MemoryStats s;
  s.weights_bytes = 100;
  s.kv.in_use_bytes = 20;
  s.limit_bytes = 1000;
  s.used_bytes = ChargedBytes(s.weights_bytes, s.kv.in_use_bytes);
  s.shrink_every = 3;
  const StatsJson j = MemoryStatsJson(s);
  EXPECT_EQ(j["limit_bytes"], 1000);
  EXPECT_EQ(j["used_bytes"], 120);
  EXPECT_EQ(j["policies"]["shrink_every"], 3);
  EXPECT_EQ(j["kv"]["in_use_bytes"], 20);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"process", "kv", "cpu_arena", "num_shrinks",
                                            "num_requests", "policies", "weights_bytes", "weights",
                                            "prefix_cache", "limit_bytes", "used_bytes"}));
}

TEST(StatsJson, ThePublicTextFormsAreTheValuesDumped) {
  MemoryStats s;
  s.weights.state = "file-backed";
  s.weights.file_backed_bytes = 7;
  EXPECT_EQ(ToJson(s), DumpStatsJson(MemoryStatsJson(s)));
  WeightsRelease r;
  r.reason = std::string("bad \xff utf-8");  // replaced, not thrown
  EXPECT_EQ(ToJson(r), DumpStatsJson(WeightsReleaseJson(r)));
  EXPECT_EQ(nlohmann::json::parse(ToJson(r))["reason"], "bad \xef\xbf\xbd utf-8");
  ModelSummary m;
  m.id = "m";
  m.kv.num_refusals = 2;
  EXPECT_EQ(ToJson(std::vector<ModelSummary>{m}), DumpStatsJson(ModelSummariesJson({m})));
  EXPECT_EQ(ModelSummariesJson({m})[0]["kv"]["num_refusals"], 2);
}

TEST(StatsJson, GeneratorStatsAreNamedAsInTheStruct) {
  GeneratorStats g;
  g.ttft_ms = 1.5;
  g.prompt_tokens = 3;
  g.kv_bytes = 4096;
  g.cached_tokens = 2;
  const StatsJson j = GeneratorStatsJson(g);
  EXPECT_EQ(j["ttft_ms"], 1.5);
  EXPECT_EQ(j["prompt_tokens"], 3);
  EXPECT_EQ(j["kv_bytes"], 4096);
  EXPECT_EQ(j["cached_tokens"], 2);
  EXPECT_EQ(j.size(), 7u);
}

TEST(MemoryGovernor, UsageIsOneReadingAndAdmissionCountsTheSameSum) {
  MemoryGovernor gov;
  gov.set_limit(1000);
  gov.ChargeWeights(600, "m");
  gov.Admit(300);
  GovernorUsage u = gov.Usage();
  EXPECT_EQ(u.limit_bytes, 1000u);
  EXPECT_EQ(u.weights_bytes, 600u);
  EXPECT_EQ(u.kv_in_use_bytes, 300u);
  EXPECT_EQ(u.used_bytes, ChargedBytes(600, 300));
  // 100 bytes are left: exactly those are admitted, one more is refused.
  EXPECT_THROW(gov.Admit(101), Error);
  gov.Admit(100);
  EXPECT_EQ(gov.Usage().used_bytes, 1000u);
  gov.Release(400);
  u = gov.Usage();
  EXPECT_EQ(u.used_bytes, 600u);
  EXPECT_EQ(u.kv_peak_bytes, 400u);
}

}  // namespace
}  // namespace ebb::internal
