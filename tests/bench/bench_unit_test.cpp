// Unit tests of the `ebb bench` building blocks: statistics, prompts, embed documents, the naive
// embedding loop's vectors, CSV, the device summary and its JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/embed_documents.h"
#include "bench/naive_embed_loop.h"
#include "bench/prompts.h"
#include "bench/report_csv.h"
#include "bench/report_json.h"
#include "bench/stats_math.h"
#include "ebb/embedding.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "json_schema_lite.h"
#include "test_env.h"

namespace ebb::bench {
namespace {

TEST(StatsMath, MeanStddevPercentiles) {
  const std::vector<double> xs{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Mean(xs), 2.5);
  EXPECT_NEAR(Stddev(xs), std::sqrt(5.0 / 3.0), 1e-12);  // sample stddev
  EXPECT_DOUBLE_EQ(Percentile(xs, 50), 2.5);             // NumPy "linear"
  EXPECT_DOUBLE_EQ(Percentile(xs, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(xs, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(xs, 100), 4);
  const Summary s = Summarize(xs);
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
}

TEST(StatsMath, EmptyAndSingleInputsGiveZeros) {
  const std::vector<double> none, one{7};
  EXPECT_EQ(Mean(none), 0);
  EXPECT_EQ(Stddev(one), 0);
  EXPECT_EQ(Percentile(none, 50), 0);
  EXPECT_EQ(Percentile(one, 90), 7);
  const LinearFit f = FitLine(one, one);
  EXPECT_EQ(f.slope, 0);
  EXPECT_EQ(f.slope_stderr, 0);
}

TEST(StatsMath, LeastSquaresSlopeAndStandardError) {
  // An exact line: slope 1024 bytes/iteration, no error.
  const std::vector<double> x{0, 1, 2, 3, 4}, y{100, 1124, 2148, 3172, 4196};
  LinearFit f = FitLine(x, y);
  EXPECT_NEAR(f.slope, 1024, 1e-9);
  EXPECT_NEAR(f.intercept, 100, 1e-9);
  EXPECT_NEAR(f.slope_stderr, 0, 1e-9);
  // Known answer (checked with numpy.polyfit / scipy.stats.linregress):
  // x 1..5, y {2,4,5,4,5}: slope 0.6, intercept 2.2, stderr 0.2828427.
  const std::vector<double> x2{1, 2, 3, 4, 5}, y2{2, 4, 5, 4, 5};
  f = FitLine(x2, y2);
  EXPECT_NEAR(f.slope, 0.6, 1e-12);
  EXPECT_NEAR(f.intercept, 2.2, 1e-12);
  EXPECT_NEAR(f.slope_stderr, 0.28284271247, 1e-9);
}

TEST(Prompts, SynthesizedIdsAvoidSpecialIdsAndAreDeterministic) {
  const std::vector<int32_t> specials{11, 48};
  const auto a = PromptSet::Synthesize(200, 64, specials);
  EXPECT_EQ(a, PromptSet::Synthesize(200, 64, specials));
  ASSERT_EQ(a.size(), 200u);
  for (int32_t t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 64);
    EXPECT_NE(t, 11);
    EXPECT_NE(t, 48);
  }
}

TEST(Prompts, RagLengthsSpanTheRangeAndClamp) {
  const PromptSet wide(PromptSet::Synthesize(10, 100, {}), 100, {}, 100000);
  int lo = 1 << 30, hi = 0;
  for (int i = 0; i < 200; ++i) {
    const int n = wide.RagLength(i);
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    EXPECT_EQ(n, wide.RagLength(i));
  }
  EXPECT_GE(lo, 64);
  EXPECT_LT(lo, 300);
  EXPECT_LE(hi, 2048);
  EXPECT_GT(hi, 1800);
  const PromptSet narrow(PromptSet::Synthesize(10, 100, {}), 100, {}, 500);
  for (int i = 0; i < 50; ++i) EXPECT_LE(narrow.RagLength(i), 500);
  const auto rows = narrow.Rows(3, 2, PromptKind::kRag);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(static_cast<int>(rows[0].size()), narrow.RagLength(3));
}

TEST(Prompts, RagPrefixSharesThePrefixAndVariesTheQuestionFromItsFirstToken) {
  const std::vector<int32_t> specials{0, 1};
  const auto prefix = PromptSet::Synthesize(100, 512, specials);
  const PromptSet set(PromptSet::Synthesize(10, 512, specials), 512, specials, 1000,
                      RagPrefixPrompts{prefix, 12});
  std::set<int32_t> firsts;
  for (int i = 0; i < 200; ++i) {
    const auto rows = set.Rows(i, 1, PromptKind::kRagPrefix);
    ASSERT_EQ(rows[0].size(), 112u);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), rows[0].begin()));
    EXPECT_EQ(rows, set.Rows(i, 1, PromptKind::kRagPrefix)) << "deterministic";
    firsts.insert(rows[0][100]);
    for (int32_t t : rows[0]) EXPECT_GT(t, 1) << "no special ids";
  }
  EXPECT_EQ(firsts.size(), 200u) << "every question starts with its own token";
  EXPECT_EQ(PromptKindOf("rag-prefix"), PromptKind::kRagPrefix);
  EXPECT_EQ(PromptKindOf("rag"), PromptKind::kRag);
  EXPECT_EQ(PromptKindOf("seed-loop"), PromptKind::kFixed);
  // Cut to the context: the question keeps its length, the prefix takes what is left.
  const PromptSet cut(PromptSet::Synthesize(10, 512, specials), 512, specials, 50,
                      RagPrefixPrompts{prefix, 12});
  EXPECT_EQ(cut.rag_prefix().size(), 38u);
  EXPECT_EQ(cut.Rows(0, 2, PromptKind::kRagPrefix)[1].size(), 50u);
}

TEST(EmbedDocuments, MixedLengthsWithinTheLimitFramedBySpecialTokensAndDeterministic) {
  const std::vector<int32_t> specials{0, 2, 3};
  const EmbedDocuments docs(1024, specials, /*cls=*/2, /*sep=*/3, /*max_tokens=*/512);
  EXPECT_EQ(docs.Rows(5, 64), EmbedDocuments(1024, specials, 2, 3, 512).Rows(5, 64));
  EXPECT_NE(docs.Rows(5, 64), docs.Rows(6, 64)) << "each request has its own documents";
  EXPECT_NE(EmbedDocuments(1024, specials, 2, 3, 512, 99).Rows(5, 64), docs.Rows(5, 64))
      << "the seed changes them";
  int n_short = 0, n_medium = 0, n_long = 0;
  size_t longest = 0;
  for (int32_t request = 0; request < 20; ++request) {
    const auto rows = docs.Rows(request, 50);
    ASSERT_EQ(rows.size(), 50u);
    for (int32_t j = 0; j < 50; ++j) {
      const auto& row = rows[static_cast<size_t>(j)];
      EXPECT_EQ(static_cast<int32_t>(row.size()), docs.Length(request, j));
      ASSERT_GE(row.size(), 8u);
      ASSERT_LE(row.size(), 512u);
      EXPECT_EQ(row.front(), 2);
      EXPECT_EQ(row.back(), 3);
      for (size_t t = 1; t + 1 < row.size(); ++t) {
        EXPECT_TRUE(std::find(specials.begin(), specials.end(), row[t]) == specials.end());
        EXPECT_LT(row[t], 1024);
      }
      n_short += row.size() <= 32;
      n_medium += row.size() > 32 && row.size() <= 128;
      n_long += row.size() > 128;
      longest = std::max(longest, row.size());
    }
  }
  // 1,000 documents: about half short, 35 % medium, 15 % long, the longest near the limit.
  EXPECT_NEAR(n_short, 500, 60);
  EXPECT_NEAR(n_medium, 350, 60);
  EXPECT_NEAR(n_long, 150, 45);
  EXPECT_GT(longest, 480u);
  // A small model limit clamps every document.
  const EmbedDocuments small(1024, specials, 2, 3, 16);
  for (const auto& row : small.Rows(0, 40)) EXPECT_LE(row.size(), 16u);
}

// The baseline computes what ebb computes (mean pooling, normalised), so that its throughput is
// a like-for-like comparison: the same vectors within 1e-4 on the same documents.
TEST(NaiveEmbedLoop, ComputesEbbsMeanPooledVectors) {
  BenchOptions o;
  o.model_dir = ebb::testing::TestModelsDir() / "bert-tiny-fp32";
  o.scenario = "embed";
  o.batch = 10;
  o.embed_options = {{"embed.batch_size", "3"}};
  auto model = ebb::LoadModel(o.model_dir);
  const EmbedDocuments docs(model->info().vocab_size, {0, 1, 2, 3}, 2, 3,
                            model->info().context_length);
  NaiveEmbedWorkload naive("naive-ort", o, docs);
  naive.Setup();
  const RequestTiming t = naive.RunIteration(4);
  EmbedRequest req;
  req.input_ids = docs.Rows(4, 10);
  req.options.pooling = Pooling::kMean;
  req.options.normalize = true;
  req.options.batch_size = 3;  // the same rows per Run() as the naive loop
  const EmbedResult r = Embed(model, req);
  EXPECT_EQ(t.texts, 10);
  EXPECT_EQ(static_cast<uint64_t>(t.prompt_tokens), r.usage.prompt_tokens);
  EXPECT_GT(t.padded_tokens, static_cast<int64_t>(r.padded_tokens))
      << "input-order batches of 3 pad more than length buckets";
  const auto& got = naive.last_embeddings();
  ASSERT_EQ(got.size(), r.embeddings.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), r.embeddings[i].size());
    for (size_t k = 0; k < got[i].size(); ++k) {
      EXPECT_NEAR(got[i][k], r.embeddings[i][k], 1e-4) << "text " << i << " value " << k;
    }
  }
  naive.Teardown();
}

TEST(BenchRunner, SummaryLeavesWarmUpOutAndFitsTheAfterSamples) {
  std::vector<IterationRecord> its;
  for (int i = 0; i < 6; ++i) {
    IterationRecord r;
    r.index = i;
    r.warmup = i < 2;
    r.timing.ttft_s = r.warmup ? 100 : 0.01 * i;  // warm-up outliers must not count
    r.timing.tps = 50;
    r.after.rss_bytes = r.warmup ? 1 : 1000000 + 4096 * i;  // 4 KiB per iteration
    r.after.anon_bytes = 500;
    r.after.kv.reserved_bytes = 0;
    r.peak_rss_bytes = 2000000;
    its.push_back(r);
  }
  const RunSummary s = SummarizeRun(its);
  EXPECT_EQ(s.measured_iterations, 4);
  EXPECT_NEAR(s.ttft_s.max, 0.05, 1e-12);
  EXPECT_NEAR(s.rss_slope.slope, 4096, 1e-6);
  EXPECT_NEAR(s.rss_slope.slope_stderr, 0, 1e-6);
  EXPECT_EQ(s.rss_slope.n, 4u);
  EXPECT_EQ(s.anon_slope.slope, 0);
  ASSERT_TRUE(s.kv_reserved_slope.has_value());
  EXPECT_FALSE(s.arena_total_slope.has_value());  // absent figures: no fit
  EXPECT_EQ(s.peak_rss_bytes, 2000000u);
  EXPECT_EQ(s.rss_steps.intervals, 3);  // between the 4 measured iterations only
  EXPECT_EQ(s.rss_steps.changed, 3);
  EXPECT_EQ(s.rss_steps.largest_step_bytes, 4096);
}

// One page given back in 20 flat requests: a step, not a trend.
TEST(BenchRunner, StepsCountTheIntervalsWhereRssMovedAndKeepTheSign) {
  std::vector<IterationRecord> its(21);
  for (int i = 0; i < 21; ++i) {
    its[i].index = i;
    its[i].warmup = i == 0;
    its[i].after.rss_bytes = i == 0 ? 1 : (i < 12 ? 1000000 : 1000000 - 4096);
    if (i == 15) its[i].after.rss_bytes += 8192;  // a one-request bump: two changes
  }
  const RunSummary s = SummarizeRun(its);
  EXPECT_EQ(s.rss_steps.intervals, 19);
  EXPECT_EQ(s.rss_steps.changed, 3);
  EXPECT_EQ(s.rss_steps.largest_step_bytes, 8192);
  its[15].after.rss_bytes -= 8192;
  EXPECT_EQ(SummarizeRun(its).rss_steps.largest_step_bytes, -4096);
  EXPECT_EQ(SummarizeRun(its).rss_steps.changed, 1);
}

// A workload that does nothing: whatever the process's RSS does over its run is the runner's
// own doing.
class IdleWorkload : public Workload {
 public:
  std::string name() const override { return "idle"; }
  std::string engine() const override { return "ebb"; }
  std::string scenario() const override { return "idle"; }
  double Setup() override { return 0; }
  RequestTiming RunIteration(int32_t) override {
    AtLastToken();
    return {};
  }
  KvSample Kv() const override { return {0, 0, std::nullopt}; }
  void Teardown() override {}
};

// The runner's records must not show in the memory it measures. A record vector that grew (or
// was only reserved) as the run went faulted in a fresh page every ~13 records: +300 B per
// iteration in every run, ebb's and the baselines' alike.
TEST(BenchRunner, ItsOwnRecordsDoNotShowInTheRssSlope) {
  IdleWorkload w;
  BenchOptions o;
  o.warmup = 0;
  o.iterations = 400;  // ~120 KB of records
  const RunResult run = RunWorkload(w, o);
  ASSERT_EQ(run.iterations.size(), 400u);
  EXPECT_EQ(run.iterations.back().index, 399);
  EXPECT_LT(std::fabs(run.summary.rss_slope.slope), 50.0)
      << "RSS moved by " << run.summary.rss_slope.slope << " B per idle iteration; first "
      << run.iterations.front().after.rss_bytes << " B, last "
      << run.iterations.back().after.rss_bytes << " B";
}

TEST(ReportCsv, EmptyCellsForAbsentFigures) {
  RunResult r;
  r.name = "a,b";  // quoted
  r.engine = "ebb";
  r.scenario = "seed-loop";
  IterationRecord it;
  it.timing.prompt_tokens = 3;
  it.before.kv.in_use_bytes = 5;
  r.iterations.push_back(it);
  const std::string csv = ReportCsv({r});
  // The last four cells: texts and padded_tokens, 0 for a generation request; cached_tokens;
  // the prefix cache's bytes after, empty where the workload has none.
  EXPECT_NE(csv.find("\n\"a,b\",ebb,seed-loop,0,0,3,0,0,0,0,,0,0,5,,,,0,0,,,,,0,0,,,,,0,0,0,0,\n"),
            std::string::npos)
      << csv;
  it.timing.texts = 7;
  it.timing.padded_tokens = 96;
  it.timing.cached_tokens = 48;
  it.after.kv.prefix_cache_bytes = 4096;
  r.iterations[0] = it;
  EXPECT_NE(ReportCsv({r}).find(",0,7,96,48,4096\n"), std::string::npos) << ReportCsv({r});
}

// A run with the KV on a device: six iterations (two warm-up); `kv_after(i)` is the device KV in
// use after iteration i, `used_after(i)` the device's used bytes then.
std::vector<IterationRecord> DeviceRun(const std::function<uint64_t(int)>& kv_after,
                                       const std::function<uint64_t(int)>& used_after,
                                       bool driver) {
  std::vector<IterationRecord> its(6);
  for (int i = 0; i < 6; ++i) {
    its[i].index = i;
    its[i].warmup = i < 2;
    its[i].after.rss_bytes = 1000000;
    its[i].last_token.device.kv_in_use_bytes = 65536;
    its[i].last_token.device.used_bytes = 1065536;
    its[i].after.device.kv_in_use_bytes = kv_after(i);
    its[i].after.device.kv_reserved_bytes = kv_after(i);
    its[i].after.device.used_bytes = used_after(i);
    if (driver) its[i].after.device.driver_process_bytes = 200000000 + 1000 * i;
  }
  return its;
}

TEST(BenchRunner, DeviceSummaryCountsKvBackToZeroAndFitsUsedBytes) {
  RunResult r;
  r.scenario = "seed-loop";
  r.iterations = DeviceRun([](int) { return 0; }, [](int) { return 1000000; }, false);
  r.summary = SummarizeRun(r.iterations);
  ASSERT_TRUE(r.summary.device.has_value());
  const DeviceSummary& d = *r.summary.device;
  EXPECT_EQ(d.iterations, 4);  // the measured ones
  EXPECT_EQ(d.kv_zero_after, 4);
  EXPECT_EQ(d.max_kv_in_use_after_bytes, 0u);
  EXPECT_EQ(d.peak_kv_in_use_bytes, 65536u);  // the last-token samples count for the peak
  EXPECT_EQ(d.peak_used_bytes, 1065536u);
  EXPECT_EQ(d.used_slope.slope, 0);
  EXPECT_EQ(d.used_steps.changed, 0);
  EXPECT_EQ(d.used_steps.intervals, 3);
  EXPECT_FALSE(d.driver_process_slope.has_value());  // no NVML: no fit, not a fit of zeros
  EXPECT_FALSE(d.peak_driver_process_bytes.has_value());
  EXPECT_EQ(DeviceKvBackToZero(r), std::optional<bool>(true));

  // One measured generator left 4 KiB behind, and used bytes grew with it.
  r.iterations = DeviceRun([](int i) { return i == 4 ? 4096 : 0; },
                           [](int i) { return i >= 4 ? 1004096 : 1000000; }, true);
  r.summary = SummarizeRun(r.iterations);
  ASSERT_TRUE(r.summary.device.has_value());
  EXPECT_EQ(r.summary.device->kv_zero_after, 3);
  EXPECT_EQ(r.summary.device->max_kv_in_use_after_bytes, 4096u);
  EXPECT_EQ(r.summary.device->used_steps.changed, 1);
  EXPECT_EQ(r.summary.device->used_steps.largest_step_bytes, 4096);
  ASSERT_TRUE(r.summary.device->driver_process_slope.has_value());
  EXPECT_NEAR(r.summary.device->driver_process_slope->slope, 1000, 1e-6);
  EXPECT_EQ(r.summary.device->peak_driver_process_bytes, std::optional<uint64_t>(200005000));
  EXPECT_EQ(DeviceKvBackToZero(r), std::optional<bool>(false));

  // reuse keeps its generator: KV in use after a request is not a leak, so no verdict.
  r.scenario = "reuse";
  EXPECT_FALSE(DeviceKvBackToZero(r).has_value());
}

TEST(BenchRunner, NoDeviceSummaryOnTheCpuOrWhenAMeasuredSampleHasNone) {
  std::vector<IterationRecord> its(3);
  for (int i = 0; i < 3; ++i) its[i].index = i;
  EXPECT_FALSE(SummarizeRun(its).device.has_value());
  // load-unload: the model (and its device figures) is gone after the request.
  its = DeviceRun([](int) { return 0; }, [](int) { return 1; }, false);
  its[5].after.device = DeviceSample{};
  EXPECT_FALSE(SummarizeRun(its).device.has_value());
}

TEST(ReportCsv, DeviceColumnsOnlyWhenARunHasADevice) {
  RunResult cpu;
  cpu.name = "ebb:seed-loop";
  cpu.iterations.resize(1);
  const std::string without = ReportCsv({cpu});
  EXPECT_EQ(without.find("device_"), std::string::npos) << without;

  RunResult gpu = cpu;
  gpu.iterations = DeviceRun([](int) { return 0; }, [](int) { return 777; }, false);
  const std::string with = ReportCsv({cpu, gpu});
  std::vector<std::string> lines;
  std::stringstream ss(with);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u + 1 + 6);
  EXPECT_NE(lines[0].find(",after_prefix_cache_bytes,before_device_kv_in_use_bytes,"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find(",after_device_used_bytes,after_device_driver_process_bytes"),
            std::string::npos)
      << lines[0];
  const auto columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const auto& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), ','), columns) << l;
  EXPECT_TRUE(lines[1].ends_with(",,,,,,,,,,,,")) << lines[1];  // the CPU run: empty cells
  // after: kv in use 0, reserved 0, used 777, no driver figure
  EXPECT_TRUE(lines[2].ends_with(",0,0,777,")) << lines[2];
}

TEST(ReportJson, DeviceFiguresValidateAgainstTheSchema) {
  std::ifstream in(std::filesystem::path(EBB_SOURCE_DIR) / "docs" / "bench.schema.json");
  const ebb::testing::JsonSchemaLite schema(nlohmann::json::parse(in));
  RunResult gpu;
  gpu.name = "ebb:seed-loop";
  gpu.engine = "ebb";
  gpu.scenario = "seed-loop";
  gpu.iterations = DeviceRun([](int) { return 0; }, [](int) { return 777; }, true);
  for (auto& it : gpu.iterations) it.timing.prompt_tokens = 4;
  gpu.summary = SummarizeRun(gpu.iterations);
  gpu.device = DeviceInfo{"webgpu:0", "llvmpipe", "lazyRelease", 700, 0};
  RunResult cpu = gpu;
  cpu.name = "ebb:seed-loop,execution_provider=cpu";
  for (auto& it : cpu.iterations) {
    it.before.device = it.last_token.device = it.after.device = DeviceSample{};
  }
  cpu.summary = SummarizeRun(cpu.iterations);
  cpu.device.reset();
  BenchOptions o;
  o.model_dir = "m";
  const nlohmann::json j = nlohmann::json::parse(ReportJson(Environment{}, o, {gpu, cpu}).dump());
  const auto errors = schema.Validate(j);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto& d = j["runs"][0]["summary"]["device"];
  EXPECT_EQ(d["kv_back_to_zero"], true);
  EXPECT_EQ(d["kv_zero_after"], 4);
  EXPECT_NEAR(d["slopes"]["driver_process_after"]["bytes_per_iteration"].get<double>(), 1000, 1e-6);
  EXPECT_EQ(j["runs"][0]["device"]["device"], "webgpu:0");
  EXPECT_EQ(j["runs"][0]["iterations"][2]["memory_after"]["device_used_bytes"], 777);
  EXPECT_TRUE(j["runs"][1]["device"].is_null());
  EXPECT_TRUE(j["runs"][1]["summary"]["device"].is_null());
  EXPECT_TRUE(j["runs"][1]["iterations"][0]["memory_after"]["device_used_bytes"].is_null());
}

}  // namespace
}  // namespace ebb::bench
