// `ebb bench` end to end: a real run's JSON validates against docs/bench.schema.json, CSV and
// SVG are well-formed with a series per run, and bad flags give clear errors (exit status 1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench_test_util.h"
#include "ebb/version.h"
#include "json_schema_lite.h"

namespace ebb::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json Schema() {
  return nlohmann::json::parse(
      ReadFile(std::filesystem::path(EBB_SOURCE_DIR) / "docs" / "bench.schema.json"));
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// One shared run of every scenario family the report can hold (ebb + naive-ort + recycle:K),
// made once for the tests below.
class BenchRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("run");
    const std::string args = "bench " + TinyModel() +
                             " --iterations 4 --warmup 1 --prompt-tokens 32 --gen-tokens 8"
                             " --compare naive-ort recycle:2 --json " +
                             (*dir_ / "r.json") + " --csv " + (*dir_ / "r.csv") + " --plot " +
                             (*dir_ / "r.svg");
    result_ = new CliResult(RunCli(args));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  static TempDir* dir_;
  static CliResult* result_;
};
TempDir* BenchRun::dir_ = nullptr;
CliResult* BenchRun::result_ = nullptr;

TEST_F(BenchRun, JsonValidatesAgainstTheDocumentedSchema) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  const auto doc = nlohmann::json::parse(ReadFile(*dir_ / "r.json"));
  const auto errors = JsonSchemaLite(Schema()).Validate(doc);
  EXPECT_TRUE(errors.empty()) << Join(errors);
  ASSERT_EQ(doc["runs"].size(), 3u);
  EXPECT_EQ(doc["runs"][0]["name"], "ebb:seed-loop");
  EXPECT_EQ(doc["runs"][1]["name"], "naive-ort");
  EXPECT_EQ(doc["runs"][2]["name"], "recycle:2");
  for (const auto& run : doc["runs"]) {
    EXPECT_EQ(run["iterations"].size(), 5u);  // 1 warm-up + 4
    EXPECT_EQ(run["summary"]["measured_iterations"], 4);
    EXPECT_GT(run["summary"]["ttft_s"]["p50"].get<double>(), 0);
    EXPECT_GT(run["summary"]["tps"]["p50"].get<double>(), 0);
  }
  // ebb's KV pool is reported: in use at the last token, 0 once the generator is gone.
  EXPECT_GT(doc["runs"][0]["iterations"][1]["memory_last_token"]["kv_in_use_bytes"], 0);
  EXPECT_EQ(doc["runs"][0]["iterations"][1]["memory_after"]["kv_in_use_bytes"], 0);
  // naive-ort holds its KV as ORT-allocated presents until the request ends.
  EXPECT_GT(doc["runs"][1]["iterations"][1]["memory_last_token"]["kv_in_use_bytes"], 0);
  EXPECT_EQ(doc["runs"][1]["iterations"][1]["memory_after"]["kv_in_use_bytes"], 0);
  EXPECT_TRUE(doc["runs"][1]["iterations"][1]["memory_after"]["kv_reserved_bytes"].is_null());
  // ORT's arena figures, for ebb (ModelControls::Stats()) and the naive loop alike.
  for (int run : {0, 1}) {
    const auto& after = doc["runs"][run]["iterations"][1]["memory_after"];
    EXPECT_GT(after["arena_total_allocated_bytes"].get<int64_t>(), 0) << run;
    EXPECT_FALSE(after["arena_in_use_bytes"].is_null()) << run;
  }
  // recycle:2 reloads the model in every other iteration and says how long that took.
  EXPECT_FALSE(doc["runs"][2]["iterations"][2]["load_s"].is_null());
  EXPECT_TRUE(doc["runs"][2]["iterations"][1]["load_s"].is_null());
  EXPECT_EQ(doc["options"]["compare"], nlohmann::json({"naive-ort", "recycle:2"}));
  EXPECT_FALSE(doc["environment"]["ort_version"].get<std::string>().empty());
  EXPECT_EQ(doc["environment"]["cpu_kernels"].get<std::string>(), CpuKernels());
}

TEST_F(BenchRun, TheValidatorRejectsBrokenReports) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  const JsonSchemaLite v(Schema());
  const auto good = nlohmann::json::parse(ReadFile(*dir_ / "r.json"));
  auto missing = good;
  missing["runs"][0]["summary"].erase("tps");
  EXPECT_FALSE(v.Validate(missing).empty());
  auto wrong_type = good;
  wrong_type["runs"][1]["iterations"][0]["memory_after"]["rss_bytes"] = "big";
  EXPECT_FALSE(v.Validate(wrong_type).empty());
  auto extra = good;
  extra["environment"]["surprise"] = 1;
  EXPECT_FALSE(v.Validate(extra).empty());
  auto bad_version = good;
  bad_version["schema_version"] = 2;
  EXPECT_FALSE(v.Validate(bad_version).empty());
}

TEST_F(BenchRun, PrintsASummaryRowPerRunWithRatios) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  EXPECT_THAT(result_->out, HasSubstr("ttft p50"));
  EXPECT_THAT(result_->out, HasSubstr("naive-ort vs ebb:seed-loop: ttft x"));
  EXPECT_THAT(result_->out, HasSubstr("recycle:2 vs ebb:seed-loop"));
  // Not a terminal: plain progress lines, no carriage returns.
  EXPECT_THAT(result_->out, HasSubstr("ebb:seed-loop iteration 1/5 (warm-up)"));
  EXPECT_THAT(result_->out, Not(HasSubstr("\r")));
}

TEST_F(BenchRun, CsvHasAHeaderAndARowPerIterationAndRun) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  const std::string csv = ReadFile(*dir_ / "r.csv");
  std::vector<std::string> lines;
  std::stringstream ss(csv);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u + 3 * 5);
  EXPECT_EQ(lines[0].rfind("run,engine,scenario,index,warmup,", 0), 0u);
  const auto columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const auto& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), ','), columns) << l;
  EXPECT_EQ(lines[1].rfind("ebb:seed-loop,ebb,seed-loop,0,1,32,", 0), 0u) << lines[1];
}

TEST_F(BenchRun, SvgParsesAsXmlWithASeriesPerRun) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  // Python's standard XML parser: a real parser, not a pattern match. Prints, per panel, the runs
  // that have a line in it.
  const std::string script =
      "import sys, xml.etree.ElementTree as ET\n"
      "ns = '{http://www.w3.org/2000/svg}'\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "assert root.tag == ns + 'svg', root.tag\n"
      "for g in root.iter(ns + 'g'):\n"
      "    if g.get('class') == 'panel':\n"
      "        runs = [p.get('data-run') for p in g.iter(ns + 'polyline')\n"
      "                if p.get('class') == 'series']\n"
      "        print(g.get('data-title') + ': ' + ','.join(runs))\n";
  const std::string py = *dir_ / "check_svg.py";
  std::ofstream(py) << script;
  const std::string cmd = std::string(EBB_PYTHON3) + " " + py + " " + (*dir_ / "r.svg") + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ASSERT_EQ(pclose(p), 0) << out;
  EXPECT_THAT(
      out,
      HasSubstr("RSS after iteration (dashed: peak in it): ebb:seed-loop,naive-ort,recycle:2"));
  EXPECT_THAT(out, HasSubstr("Time to first token: ebb:seed-loop,naive-ort,recycle:2"));
  EXPECT_THAT(out,
              HasSubstr("Decode rate (2nd and later tokens): ebb:seed-loop,naive-ort,recycle:2"));
  // naive-ort's KV is its presents; every run has an ORT arena.
  EXPECT_THAT(out, HasSubstr("KV at last token (dashed: reserved after): "
                             "ebb:seed-loop,naive-ort,recycle:2\n"));
  EXPECT_THAT(out, HasSubstr("ORT arena total (dashed: in use) after: "
                             "ebb:seed-loop,naive-ort,recycle:2\n"));
}

// ---- other scenarios -----------------------------------------------------------------------

TEST(BenchScenarios, ReuseRagAndLoadUnloadRunAndValidate) {
  TempDir dir("scenarios");
  const JsonSchemaLite v(Schema());
  for (const std::string scenario : {"reuse", "rag", "load-unload"}) {
    const std::string json = dir / (scenario + ".json");
    const auto r = RunCli("bench " + TinyModel() + " --scenario " + scenario +
                          " --iterations 3 --warmup 0 --prompt-tokens 16 --gen-tokens 4"
                          " --kv-cache dynamic --json " +
                          json);
    ASSERT_EQ(r.status, 0) << scenario << "\n" << r.out;
    const auto doc = nlohmann::json::parse(ReadFile(json));
    const auto errors = v.Validate(doc);
    EXPECT_TRUE(errors.empty()) << scenario << "\n" << Join(errors);
    EXPECT_EQ(doc["runs"][0]["scenario"], scenario);
    EXPECT_EQ(doc["options"]["kv_cache"], "dynamic");
    const auto& its = doc["runs"][0]["iterations"];
    if (scenario == "rag") {
      // Deterministic lengths in 64..2048, not all the same.
      std::set<int> lengths;
      for (const auto& it : its) {
        const int n = it["prompt_tokens"];
        EXPECT_GE(n, 64);
        EXPECT_LE(n, 2048 - 4);
        lengths.insert(n);
      }
      EXPECT_GT(lengths.size(), 1u);
    }
    if (scenario == "load-unload") {
      for (const auto& it : its) EXPECT_FALSE(it["load_s"].is_null());
      EXPECT_EQ(its[0]["memory_after"]["kv_reserved_bytes"], 0);  // the model is gone
    }
    if (scenario == "reuse") {
      for (const auto& it : its) EXPECT_EQ(it["generated_tokens"], 4);
    }
  }
}

TEST(BenchScenarios, NaiveOrtRunsGpt2CombinedPast) {
  TempDir dir("gpt2");
  const std::string json = dir / "g.json";
  const auto r = RunCli("bench " + (TestModelsDir() / "gpt2-tiny-fp32").string() +
                        " --iterations 2 --warmup 0 --prompt-tokens 16 --gen-tokens 6 --batch 2"
                        " --shrink-every 1 --delay 0.01 --compare naive-ort --json " +
                        json);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(ReadFile(json));
  EXPECT_TRUE(JsonSchemaLite(Schema()).Validate(doc).empty());
  EXPECT_EQ(doc["runs"][1]["name"], "naive-ort");
  EXPECT_GT(doc["runs"][1]["iterations"][0]["generated_tokens"].get<int>(), 0);
  EXPECT_EQ(doc["options"]["batch"], 2);
  EXPECT_EQ(doc["options"]["shrink_every"], 1);
}

// Two settings of one loop side by side: rag with Tier 2's shrink policy off, then on; the
// override must reach the run's model (its arena is shrunk after every request).
TEST(BenchScenarios, CompareOverridesApplyToTheirRunOnly) {
  TempDir dir("overrides");
  const std::string json = dir / "o.json";
  const auto r = RunCli("bench " + TinyModel() +
                        " --scenario rag --iterations 3 --warmup 0 --gen-tokens 4"
                        " --process-warmup 2 --compare rag,memory.shrink_every=1"
                        " naive-ort,shrink-every=1 --json " +
                        json +
                        // ORT's attention takes its scratch, which grows with the prompt, from
                        // the arena, which is what the shrink shows; ebb's (cpu_ops) keeps a
                        // small per-thread scratch of its own.
                        " --option cpu_ops=off");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("process warm-up (rag) 2/2"));
  const auto doc = nlohmann::json::parse(ReadFile(json));
  const auto errors = JsonSchemaLite(Schema()).Validate(doc);
  EXPECT_TRUE(errors.empty()) << Join(errors);
  EXPECT_EQ(doc["options"]["process_warmup"], 2);
  const auto& runs = doc["runs"];
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["name"], "ebb:rag");
  EXPECT_EQ(runs[0]["overrides"], nlohmann::json::array());
  EXPECT_EQ(runs[1]["name"], "ebb:rag,memory.shrink_every=1");
  EXPECT_EQ(runs[1]["overrides"], nlohmann::json({"memory.shrink_every=1"}));
  EXPECT_EQ(runs[1]["shrink_every"], 0);
  EXPECT_EQ(runs[2]["name"], "naive-ort,shrink-every=1");
  EXPECT_EQ(runs[2]["shrink_every"], 1);
  EXPECT_EQ(runs[2]["scenario"], "rag");
  // Same prompts in both ebb runs; without the policy the arena keeps what the longest prompt
  // needed, with it the arena is shrunk after every request.
  uint64_t kept = 0, shrunk = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(runs[0]["iterations"][i]["prompt_tokens"], runs[1]["iterations"][i]["prompt_tokens"]);
    kept = std::max(
        kept,
        runs[0]["iterations"][i]["memory_after"]["arena_total_allocated_bytes"].get<uint64_t>());
    shrunk = std::max(
        shrunk,
        runs[1]["iterations"][i]["memory_after"]["arena_total_allocated_bytes"].get<uint64_t>());
  }
  EXPECT_LT(shrunk * 2, kept) << "shrunk " << shrunk << " kept " << kept;
}

// An override reaches the model of its own run: a 1-byte KV budget makes that run, and only
// that run, refuse its first request, naming the key.
// The completed runs are still reported.
TEST(BenchScenarios, AnOverrideReachesItsRunsModel) {
  TempDir dir("failed-run");
  const std::string json = dir / "f.json";
  const auto r = RunCli("bench " + TinyModel() +
                        " --iterations 1 --warmup 0 --prompt-tokens 8 --gen-tokens 2"
                        " --compare seed-loop,kv_cache.max_bytes=1 --json " +
                        json);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error: run 'ebb:seed-loop,kv_cache.max_bytes=1' failed: KV cache "
                               "needs"));
  EXPECT_THAT(r.out, HasSubstr("kv_cache.max_bytes=1 (1 B)"));
  EXPECT_THAT(r.out, HasSubstr("(the reports hold the 1 run(s) that completed)"));
  const auto doc = nlohmann::json::parse(ReadFile(json));
  EXPECT_TRUE(JsonSchemaLite(Schema()).Validate(doc).empty());
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["name"], "ebb:seed-loop");
}

TEST(BenchScenarios, PromptFileIsTokenizedWithTheModelsTokenizer) {
  TempDir dir("prompt");
  const std::string prompt = dir / "prompt.txt";
  std::ofstream(prompt) << "Users who benchmark find the leaks: the same prompt, many times.";
  const std::string json = dir / "p.json";
  const auto r = RunCli("bench " + TinyModel() + " --prompt-file " + prompt +
                        " --iterations 1 --warmup 0 --gen-tokens 2 --json " + json);
#ifdef EBB_TEST_HAVE_TOKENIZER
  ASSERT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(ReadFile(json));
  EXPECT_TRUE(JsonSchemaLite(Schema()).Validate(doc).empty());
  EXPECT_EQ(doc["options"]["prompt_file"], prompt);
  EXPECT_TRUE(doc["options"]["prompt_tokens"].is_null());
  EXPECT_GT(doc["runs"][0]["iterations"][0]["prompt_tokens"].get<int>(), 5);
#else
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error: --prompt-file needs the tokenizer"));
#endif
}

TEST(BenchScenarios, JsonToStdoutKeepsStdoutParseable) {
  const std::string cmd = CliPath() + " bench " + TinyModel() +
                          " --iterations 1 --warmup 0 --prompt-tokens 8 --gen-tokens 2 --json -"
                          " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ASSERT_EQ(pclose(p), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["schema_version"], 1);
}

// ---- rag-prefix and the prefix cache (issue 25) ---------------------------------------------

// The cache off (the --scenario run), on, and the naive loop on the same prompts: the first
// request of the cache-on run fills the cache (a miss), every later one takes the whole 64-token
// prefix from it (a hit) and prefills only its question; off, nothing is reused or counted.
TEST(BenchRagPrefix, TheCacheHitsEveryRequestButTheFirstAndOffReportsNothing) {
  TempDir dir("rag-prefix");
  const std::string json = dir / "p.json", csv = dir / "p.csv";
  const auto r = RunCli("bench " + TinyModel() +
                        " --scenario rag-prefix --iterations 4 --warmup 0 --prefix-tokens 64"
                        " --question-tokens 8 --gen-tokens 4"
                        " --compare rag-prefix,prefix_cache.max_bytes=8MiB naive-ort --json " +
                        json + " --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(ReadFile(json));
  const auto errors = JsonSchemaLite(Schema()).Validate(doc);
  EXPECT_TRUE(errors.empty()) << Join(errors);
  EXPECT_EQ(doc["options"]["scenario"], "rag-prefix");
  EXPECT_EQ(doc["options"]["prefix_tokens"], 64);
  EXPECT_EQ(doc["options"]["question_tokens"], 8);
  const auto& runs = doc["runs"];
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["name"], "ebb:rag-prefix");
  EXPECT_EQ(runs[1]["name"], "ebb:rag-prefix,prefix_cache.max_bytes=8MiB");
  EXPECT_EQ(runs[2]["scenario"], "rag-prefix");

  const auto& off = runs[0]["prefix_cache"];
  EXPECT_EQ(off["max_bytes"], 0);
  EXPECT_EQ(off["hits"], 0);
  EXPECT_EQ(off["misses"], 0);
  EXPECT_EQ(off["tokens_reused"], 0);
  EXPECT_EQ(off["bytes"], 0);
  const auto& on = runs[1]["prefix_cache"];
  EXPECT_EQ(on["max_bytes"], 8u << 20);
  EXPECT_EQ(on["hits"], 3) << "iterations - 1: every request after the first";
  EXPECT_EQ(on["misses"], 1) << "the first request fills the cache";
  EXPECT_EQ(on["tokens_reused"], 3 * 64);
  EXPECT_GT(on["bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(on["block_tokens"], 16);
  EXPECT_TRUE(runs[2]["prefix_cache"].is_null());

  for (int i = 0; i < 4; ++i) {
    const auto& a = runs[0]["iterations"][i];
    const auto& b = runs[1]["iterations"][i];
    const auto& n = runs[2]["iterations"][i];
    EXPECT_EQ(a["prompt_tokens"], 64 + 8);
    EXPECT_EQ(b["prompt_tokens"], 64 + 8);
    EXPECT_EQ(n["prompt_tokens"], 64 + 8);
    EXPECT_EQ(a["cached_tokens"], 0);
    EXPECT_EQ(b["cached_tokens"], i == 0 ? 0 : 64) << "request " << i;
    EXPECT_EQ(n["cached_tokens"], 0);
    EXPECT_EQ(a["memory_after"]["prefix_cache_bytes"], 0);
    EXPECT_GT(b["memory_after"]["prefix_cache_bytes"].get<uint64_t>(), 0u);
    // The cache's blocks are KV pool memory: in use between requests.
    EXPECT_GE(b["memory_after"]["kv_in_use_bytes"].get<uint64_t>(),
              b["memory_after"]["prefix_cache_bytes"].get<uint64_t>());
    EXPECT_TRUE(n["memory_after"]["prefix_cache_bytes"].is_null());
  }
  EXPECT_THAT(r.out, HasSubstr("\n  ebb:rag-prefix,prefix_cache.max_bytes=8MiB hits 3, misses 1, "
                               "tokens reused 192, cached/request 64; holds "));
  EXPECT_THAT(r.out, HasSubstr("\n  ebb:rag-prefix "));
  EXPECT_THAT(r.out, HasSubstr(" off (prefix_cache.max_bytes=0): hits 0, tokens reused 0\n"));
  EXPECT_THAT(r.out, HasSubstr("(--warmup 0: the medians include each run's first request"));
  const std::string table = ReadFile(csv);
  EXPECT_THAT(table.substr(0, table.find('\n')),
              HasSubstr(",padded_tokens,cached_tokens,after_prefix_cache_bytes"));
}

// The prefix is cut to the context (a note says so); a prefix that is not a whole number of
// 16-token blocks is reused up to its last whole block. With a warm-up, the miss is the warm-up
// and every measured request hits (the counters still count the warm-up).
TEST(BenchRagPrefix, ALongPrefixIsCutToTheContextAndReusedInWholeBlocks) {
  TempDir dir("rag-prefix-cut");
  const std::string json = dir / "c.json";
  const auto r = RunCli("bench " + TinyModel() +
                        " --scenario rag-prefix --iterations 2 --warmup 1 --prefix-tokens 5000"
                        " --question-tokens 8 --gen-tokens 4"
                        " --option prefix_cache.max_bytes=64MiB --json " +
                        json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("note: --prefix-tokens 5000 cut to 2036 so that prefix + "
                               "--question-tokens 8 + --gen-tokens 4 fit the model's "
                               "context_length 2048"));
  EXPECT_THAT(r.out, HasSubstr("the medians leave it out"));
  const auto doc = nlohmann::json::parse(ReadFile(json));
  EXPECT_TRUE(JsonSchemaLite(Schema()).Validate(doc).empty());
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["prefix_cache"]["hits"], 2);
  EXPECT_EQ(run["prefix_cache"]["misses"], 1);
  EXPECT_EQ(run["iterations"][0]["warmup"], true);
  EXPECT_EQ(run["iterations"][0]["cached_tokens"], 0);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(run["iterations"][i]["prompt_tokens"], 2036 + 8);
    EXPECT_EQ(run["iterations"][i]["cached_tokens"], 2032) << "127 whole blocks of 2036 tokens";
  }
}

// ---- bad flags -------------------------------------------------------------------------------

struct BadFlag {
  const char* name;  // the test's name suffix
  const char* args;
  const char* message;
};

class BenchBadFlags : public ::testing::TestWithParam<BadFlag> {};

TEST_P(BenchBadFlags, FailWithAClearError) {
  const auto r = RunCli("bench " + TinyModel() + " " + GetParam().args);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr(std::string("error: ") + GetParam().message)) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, BenchBadFlags,
    ::testing::Values(
        BadFlag{"UnknownScenario", "--scenario seedloop",
                "unknown scenario 'seedloop' (did you mean 'seed-loop'?); --scenario takes one "
                "of: seed-loop, reuse, rag, rag-prefix, load-unload"},
        BadFlag{"ZeroIterations", "--iterations 0", "--iterations must be at least 1 (got 0)"},
        BadFlag{"NegativeIterations", "--iterations -3",
                "--iterations must be at least 1 (got -3)"},
        BadFlag{"NegativeWarmup", "--warmup -1", "--warmup must be at least 0 (got -1)"},
        BadFlag{"ZeroGenTokens", "--gen-tokens 0", "--gen-tokens must be at least 1 (got 0)"},
        BadFlag{"UnreadablePromptFile", "--prompt-file /nonexistent/prompt.txt",
                "--prompt-file (/nonexistent/prompt.txt): no such file"},
        BadFlag{"PromptTokensAndFile", "--prompt-tokens 5 --prompt-file x.txt",
                "give one of --prompt-tokens or --prompt-file, not both"},
        BadFlag{"UnknownBaseline", "--compare naive",
                "--compare 'naive' is not a baseline (did you mean "
                "'naive-ort'?)"},
        BadFlag{"RecycleZero", "--compare recycle:0",
                "--compare 'recycle:0': recycle:K needs a whole number"},
        BadFlag{"UnknownBaseWithOverride", "--compare ragg,shrink-every=2",
                "--compare 'ragg,shrink-every=2': 'ragg' is not a baseline (did you mean "
                "'rag'?)"},
        BadFlag{
            "UnknownOverrideKey", "--compare rag,kv_cache.mod=dynamic",
            "--compare 'rag,kv_cache.mod=dynamic': unknown model option 'kv_cache.mod' (did you "
            "mean 'kv_cache.mode'?)"},
        BadFlag{"BadOverrideValue", "--compare rag,memory.shrink_every=often",
                "--compare 'rag,memory.shrink_every=often': memory.shrink_every='often' is not"},
        BadFlag{"OverrideWithoutValue", "--compare rag,shrink-every",
                "--compare 'rag,shrink-every': 'shrink-every' is not KEY=VALUE"},
        BadFlag{"NegativeShrinkOverride", "--compare naive-ort,shrink-every=-1",
                "--compare 'naive-ort,shrink-every=-1': shrink-every needs a whole number N >= 0"},
        BadFlag{"EbbOptionOnNaiveOrt", "--compare naive-ort,prefill_chunk_size=4",
                "--compare 'naive-ort,prefill_chunk_size=4': naive-ort takes shrink-every, "
                "session_options.*, run_options.* and (with --scenario embed) embed.batch_size "
                "only"},
        BadFlag{"EmbedScenarioOnADecoder", "--scenario embed",
                "--scenario embed embeds texts, which needs an encoder (embedding) model, and "},
        BadFlag{"EmbedRunOnADecoder", "--compare embed",
                "--compare embed embeds texts, which needs an encoder (embedding) model"},
        BadFlag{"EmbedOptionWithoutEmbed", "--option embed.pooling=cls",
                "--option embed.pooling=cls is an embedding request key; it applies with "
                "--scenario embed only"},
        BadFlag{"EmbedOverrideOnAGenerationRun", "--compare rag,embed.batch_size=4",
                "--compare 'rag,embed.batch_size=4': 'embed.batch_size' is an embedding request "
                "key; it applies to embed runs only"},
        BadFlag{"NegativeProcessWarmup", "--process-warmup -1",
                "--process-warmup must be at least 0 (got -1)"},
        BadFlag{"UnknownKvMode", "--kv-cache paged",
                "--kv-cache 'paged' is not a KV mode; use static or dynamic"},
        BadFlag{"ReuseWithBatch", "--scenario reuse --batch 2",
                "scenario 'reuse' rewinds one generator"},
        BadFlag{"PromptPastContext", "--prompt-tokens 2040 --gen-tokens 64",
                "the prompt (2040 tokens) plus --gen-tokens 64 exceeds the model's "
                "context_length 2048"},
        BadFlag{"ZeroPrefixTokens", "--scenario rag-prefix --prefix-tokens 0",
                "--prefix-tokens must be at least 1 (got 0)"},
        BadFlag{"NegativePrefixTokens", "--scenario rag-prefix --prefix-tokens -16",
                "--prefix-tokens must be at least 1 (got -16)"},
        BadFlag{"NonNumberPrefixTokens", "--scenario rag-prefix --prefix-tokens 1k",
                "--prefix-tokens '1k' is not a number of tokens; give a whole number, at least 1 "
                "(e.g. --prefix-tokens 1024)"},
        BadFlag{"ZeroQuestionTokens", "--scenario rag-prefix --question-tokens 0",
                "--question-tokens must be at least 1 (got 0)"},
        BadFlag{"NonNumberQuestionTokens", "--scenario rag-prefix --question-tokens 6.5",
                "--question-tokens '6.5' is not a number of tokens"},
        BadFlag{"PrefixTokensWithoutRagPrefix", "--scenario rag --prefix-tokens 64",
                "--prefix-tokens shapes the prompts of rag-prefix runs only; use --scenario "
                "rag-prefix (or --compare rag-prefix,...) or drop it"},
        BadFlag{"QuestionPastContext",
                "--scenario rag-prefix --question-tokens 2000 --gen-tokens 48",
                "--question-tokens 2000 plus --gen-tokens 48 leaves no room for a prefix in the "
                "model's context_length 2048"},
        BadFlag{"UnknownRagPrefixOverride", "--compare rag-prefix,prefix_cache.max_byte=1MiB",
                "--compare 'rag-prefix,prefix_cache.max_byte=1MiB': unknown model option "
                "'prefix_cache.max_byte' (did you mean 'prefix_cache.max_bytes'?)"},
        BadFlag{"MalformedSessionOption", "--session-option intra_op_num_threads",
                "--session-option 'intra_op_num_threads' must be written KEY=VALUE"},
        BadFlag{"UnwritableJson",
                "--json /nonexistent/dir/r.json --iterations 1 --warmup 0 --gen-tokens 1",
                "cannot write --json '/nonexistent/dir/r.json'"}),
    [](const ::testing::TestParamInfo<BadFlag>& p) { return std::string(p.param.name); });

// ---- --scenario embed (issue 12) ----------------------------------------------------------

std::string Bert() { return (TestModelsDir() / "bert-tiny-fp32").string(); }

// ebb's Embed and the naive padded loop on the same documents, side by side in one process.
class BenchEmbedRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("embed");
    result_ = new CliResult(RunCli("bench " + Bert() +
                                   " --scenario embed --iterations 3 --warmup 1 --batch 12"
                                   " --option embed.batch_size=4 --compare naive-ort --json " +
                                   (*dir_ / "e.json") + " --csv " + (*dir_ / "e.csv")));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  static TempDir* dir_;
  static CliResult* result_;
};
TempDir* BenchEmbedRun::dir_ = nullptr;
CliResult* BenchEmbedRun::result_ = nullptr;

TEST_F(BenchEmbedRun, JsonValidatesAndCountsTheSameRealTokensForBothEngines) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  const auto doc = nlohmann::json::parse(ReadFile(*dir_ / "e.json"));
  const auto errors = JsonSchemaLite(Schema()).Validate(doc);
  EXPECT_TRUE(errors.empty()) << Join(errors);
  ASSERT_EQ(doc["runs"].size(), 2u);
  const auto& ebb = doc["runs"][0];
  const auto& naive = doc["runs"][1];
  EXPECT_EQ(ebb["name"], "ebb:embed");
  EXPECT_EQ(ebb["scenario"], "embed");
  EXPECT_EQ(naive["engine"], "naive-ort");
  EXPECT_EQ(naive["scenario"], "embed");
  EXPECT_EQ(doc["options"]["batch"], 12);
  ASSERT_EQ(ebb["iterations"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const auto& a = ebb["iterations"][i];
    const auto& b = naive["iterations"][i];
    EXPECT_EQ(a["texts"], 12);
    EXPECT_EQ(b["texts"], 12);
    // The same documents, counted the same way: real tokens, no padding.
    EXPECT_EQ(a["prompt_tokens"], b["prompt_tokens"]) << i;
    EXPECT_GE(b["padded_tokens"].get<int64_t>(), b["prompt_tokens"].get<int64_t>());
    // Length buckets pad less than input-order batches of the same size.
    EXPECT_LE(a["padded_tokens"].get<int64_t>(), b["padded_tokens"].get<int64_t>()) << i;
    EXPECT_EQ(a["generated_tokens"], 0);
    EXPECT_FALSE(a["memory_last_token"]["arena_total_allocated_bytes"].is_null());
    EXPECT_FALSE(b["memory_last_token"]["arena_total_allocated_bytes"].is_null());
  }
  for (const auto* run : {&ebb, &naive}) {
    const auto& e = (*run)["summary"]["embed"];
    ASSERT_TRUE(e.is_object());
    EXPECT_EQ(e["texts"], 36) << "3 measured requests of 12";
    EXPECT_GT(e["tokens_per_s"].get<double>(), 0);
    EXPECT_NEAR(e["tokens_per_s"].get<double>(),
                e["tokens"].get<double>() / e["seconds"].get<double>(), 1e-6);
  }
  EXPECT_EQ(ebb["summary"]["embed"]["tokens"], naive["summary"]["embed"]["tokens"]);
  EXPECT_LT(ebb["summary"]["embed"]["padded_tokens"].get<int64_t>(),
            naive["summary"]["embed"]["padded_tokens"].get<int64_t>())
      << "over 3 requests of mixed lengths, buckets of 4 save padding";
  const auto& cmp = doc["comparison"][0];
  EXPECT_NEAR(cmp["tokens_per_s_ratio"].get<double>(),
              naive["summary"]["embed"]["tokens_per_s"].get<double>() /
                  ebb["summary"]["embed"]["tokens_per_s"].get<double>(),
              1e-9);
}

TEST_F(BenchEmbedRun, PrintsThroughputAndRatiosAndWritesCsvColumns) {
  ASSERT_EQ(result_->status, 0) << result_->out;
  EXPECT_THAT(result_->out, HasSubstr("texts/s"));
  EXPECT_THAT(result_->out, HasSubstr("tokens/s"));
  EXPECT_THAT(result_->out, HasSubstr("naive-ort vs ebb:embed: tokens/s x"));
  EXPECT_THAT(result_->out, HasSubstr("ebb:embed iteration 1/4 (warm-up): 12 texts"));
  const std::string csv = ReadFile(*dir_ / "e.csv");
  EXPECT_THAT(
      csv,
      HasSubstr(",peak_rss_bytes,texts,padded_tokens,cached_tokens,after_prefix_cache_bytes\n"));
  EXPECT_THAT(csv, HasSubstr("ebb:embed,ebb,embed,0,1,"));
}

TEST(BenchEmbed, GenerationScenariosOnAnEncoderNameTheFix) {
  for (const std::string args : {"", "--scenario rag", "--scenario embed --compare seed-loop"}) {
    const auto r = RunCli("bench " + Bert() + " " + args);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_THAT(r.out, HasSubstr("is an encoder (embedding) model")) << args;
    EXPECT_THAT(r.out, HasSubstr("use --scenario embed")) << args;
  }
  const auto r = RunCli("bench " + Bert() + " --scenario embed --prompt-tokens 16");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("drop --prompt-tokens"));
}

TEST(BenchBadModel, MissingModelFolderNamesIt) {
  const auto r = RunCli("bench /nonexistent/model");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error: no model folder at /nonexistent/model"));
}

}  // namespace
}  // namespace ebb::testing
