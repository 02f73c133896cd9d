// The JSON values of ebb's figures (src/runtime/stats_json.h): every struct field is named once,
// the public text forms are those values' dumps (no second builder), and memory.limit's count
// (used = weights + KV in use) is one function that the governor's admission agrees with.
#include "runtime/stats_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

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
  EXPECT_EQ(keys, (std::vector<std::string>{"process", "kv", "device", "cpu_arena", "num_shrinks",
                                            "num_requests", "policies", "weights_bytes", "weights",
                                            "prefix_cache", "constraints", "decode_batch",
                                            "limit_bytes", "used_bytes"}));
}

// A device model's figures, consistent (used_bytes = weights + KV in use + KV retained), one driver
// figure above 2^53 (a double would round it) and the figures that are not available -1.
DeviceMemory SomeDeviceMemory() {
  DeviceMemory d;
  d.available = true;
  d.device = "webgpu:0";
  d.adapter = "NVIDIA H200 (NVIDIA, discrete, \"Vulkan\")";
  d.kv.in_use_bytes = 11;
  d.kv.retained_bytes = 12;
  d.kv.reserved_bytes = 23;
  d.kv.peak_in_use_bytes = 14;
  d.kv.max_bytes = 15;
  d.kv.retain_limit_bytes = 16;
  d.kv.num_allocations = 17;
  d.kv.num_os_maps = 0;
  d.kv.num_refusals = 19;
  d.weights_bytes = 1000;
  d.ort_cache_bytes = -1;
  d.used_bytes = 1023;
  d.limit_bytes = 4096;
  d.cache_mode = "lazyRelease";
  d.driver_process_bytes = -1;
  d.driver_used_bytes = (int64_t{1} << 53) + 1;
  d.driver_total_bytes = -1;
  return d;
}

TEST(StatsJson, DeviceMemoryNamesEveryFieldInStructOrderAndKeepsMinusOne) {
  const DeviceMemory d = SomeDeviceMemory();
  const StatsJson j = DeviceMemoryJson(d);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"available", "device", "adapter", "kv", "weights_bytes",
                                            "ort_cache_bytes", "used_bytes", "limit_bytes",
                                            "cache_mode", "driver_process_bytes",
                                            "driver_used_bytes", "driver_total_bytes"}));
  EXPECT_EQ(j["kv"], KvStatsJson(d.kv)) << "the device's KV is the one KV struct";
  // Through text and back (what the C ABI, Python and the service's clients read).
  const nlohmann::json back = nlohmann::json::parse(DumpStatsJson(j));
  EXPECT_EQ(back["available"], true);
  EXPECT_EQ(back["device"], "webgpu:0");
  EXPECT_EQ(back["adapter"], "NVIDIA H200 (NVIDIA, discrete, \"Vulkan\")");
  EXPECT_EQ(back["kv"]["in_use_bytes"], 11);
  EXPECT_EQ(back["kv"]["peak_in_use_bytes"], 14);
  EXPECT_EQ(back["kv"]["num_refusals"], 19);
  EXPECT_EQ(back["weights_bytes"], 1000);
  EXPECT_EQ(back["kv"]["retained_bytes"], 12);
  EXPECT_EQ(back["used_bytes"], 1023);
  EXPECT_EQ(back["limit_bytes"], 4096);
  EXPECT_EQ(back["cache_mode"], "lazyRelease");
  // -1 (not available) stays a signed -1, not 2^64 - 1; a large figure stays exact.
  for (const char* k : {"ort_cache_bytes", "driver_process_bytes", "driver_total_bytes"}) {
    ASSERT_TRUE(back[k].is_number_integer()) << k;
    EXPECT_EQ(back[k].get<int64_t>(), -1) << k;
  }
  EXPECT_EQ(back["driver_used_bytes"].get<int64_t>(), (int64_t{1} << 53) + 1);
  // available (padded to 8), three strings, the KV struct and seven 8-byte figures: a field added
  // to DeviceMemory without a name here fails this.
  static_assert(sizeof(DeviceMemory) ==
                sizeof(uint64_t) + 3 * sizeof(std::string) + sizeof(KvStats) + 7 * sizeof(int64_t));
}

TEST(StatsJson, ACpuModelsDeviceIsUnavailableWithMinusOneDriverFigures) {
  const StatsJson j = DeviceMemoryJson(DeviceMemory{});
  EXPECT_EQ(j["available"], false);
  EXPECT_EQ(j["device"], "");
  EXPECT_EQ(j["adapter"], "");
  EXPECT_EQ(j["cache_mode"], "");
  EXPECT_EQ(j["used_bytes"], 0);
  EXPECT_EQ(j["kv"]["in_use_bytes"], 0);
  for (const char* k :
       {"ort_cache_bytes", "driver_process_bytes", "driver_used_bytes", "driver_total_bytes"}) {
    EXPECT_EQ(j[k], -1) << k;
  }
}

TEST(StatsJson, MemoryStatsAndModelSummariesCarryTheDeviceBesideTheHostKv) {
  MemoryStats s;
  s.device = SomeDeviceMemory();
  s.kv.in_use_bytes = 0;  // a device model's host KV
  const StatsJson j = MemoryStatsJson(s);
  EXPECT_EQ(j["device"], DeviceMemoryJson(s.device));
  EXPECT_EQ(j["kv"]["in_use_bytes"], 0);
  EXPECT_EQ(nlohmann::json::parse(ToJson(s))["device"]["kv"]["in_use_bytes"], 11);
  ModelSummary m;
  m.id = "gpu";
  m.device = SomeDeviceMemory();
  const StatsJson list = ModelSummariesJson({m});
  EXPECT_EQ(list[0]["device"], DeviceMemoryJson(m.device));
  std::vector<std::string> keys;
  for (const auto& [k, v] : list[0].items()) keys.push_back(k);
  const auto at = [&](const char* k) {
    return std::find(keys.begin(), keys.end(), k) - keys.begin();
  };
  EXPECT_EQ(at("device"), at("kv") + 1) << "struct order: kv, then device";
  EXPECT_EQ(nlohmann::json::parse(ToJson(std::vector<ModelSummary>{m}))[0]["device"]["device"],
            "webgpu:0");
}

TEST(StatsJson, ThePublicTextFormsAreTheValuesDumped) {
  MemoryStats s;
  s.weights.state = WeightsState::kFileBacked;
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

TEST(StatsJson, WeightsStateIsAnEnumNamedInTheJson) {
  // Issue 38: the state was a string compared against literals in three files.
  const std::vector<std::pair<WeightsState, std::string>> names = {
      {WeightsState::kAnonymous, "anonymous"},
      {WeightsState::kFileBacked, "file-backed"},
      {WeightsState::kReleased, "released"},
      {WeightsState::kBroken, "broken"},
      {WeightsState::kMixed, "mixed"}};
  for (const auto& [state, name] : names) {
    EXPECT_EQ(WeightsStateName(state), name);
    MemoryStats s;
    s.weights.state = state;
    EXPECT_EQ(nlohmann::json::parse(ToJson(s))["weights"]["state"], name);
  }
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
