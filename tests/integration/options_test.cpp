// The one option vocabulary: the table drives every setter, the CLI help and docs/options.md;
// misspelled keys; the config's search block as generator defaults; ORT's own
// memory.enable_memory_arena_shrinkage run option.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/log.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "log_capture.h"
#include "memory/shrink_controller.h"
#include "model/genai_config.h"
#include "model/model_views.h"
#include "ort/cpu_threads.h"
#include "ort/session_options.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;

std::filesystem::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A value each key's type accepts: the default where it parses, else a typical one.
std::string Example(const OptionSpec& s) {
  switch (s.type) {
    case OptionType::kBool:
      return "1";
    case OptionType::kInt:
      return s.key == "batch_size" ? "1" : "2";
    case OptionType::kFloat:
      return s.key == "embed.max_padding" ? "1.5" : "0.5";  // a ratio of at least 1 (or 0)
    case OptionType::kSize:
      return "64MiB";
    case OptionType::kEnum:
      return std::string(s.values.substr(0, s.values.find('|')));
    case OptionType::kString:
      if (s.key == "custom_ops_library") return "none";  // a path must name a real library
      if (s.key == "json_schema") return R"({"type":"boolean"})";
      return s.key == "logit_bias" ? "5=-100" : "cpu:0";
  }
  return "";
}

TEST(OptionTable, EveryKeyIsAcceptedByEachOfItsSurfacesAndRefusedElsewhere) {
  ASSERT_GT(OptionTable().size(), 25u);
  auto model = ebb::LoadModel(Tiny());
  for (const auto& s : OptionTable()) {
    SCOPED_TRACE(std::string(s.key));
    const std::string key(s.key), v = Example(s);
    EXPECT_FALSE(s.doc.empty());
    EXPECT_EQ(FindOption(key), &s);
    // Runtime.
    RuntimeOptions ro;
    if (HasScope(s, OptionScope::kRuntime)) {
      EXPECT_NO_THROW(ro.Set(key, v));
    } else {
      EXPECT_THROW(ro.Set(key, v), Error);
    }
    // Model load (ebb's keys).
    ModelOptions mo;
    if (HasScope(s, OptionScope::kModel)) {
      EXPECT_NO_THROW(mo.Set(key, v));
    } else {
      EXPECT_THROW(mo.Set(key, v), Error);
    }
    // Session options, applied to real ORT session options.
    if (HasScope(s, OptionScope::kSession)) {
      ModelOptions so;
      EXPECT_NO_THROW(so.Set("session_options." + key, v));
      EXPECT_NO_THROW(
          internal::BuildSessionOptions(internal::EffectiveSessionOptions({}, so), {}, so));
      if (s.type != OptionType::kString) {  // a free-form string (a file prefix) has no check
        EXPECT_THROW(so.Set("session_options." + key, "not-a-value"), Error)
            << "typed session keys are checked at Set";
      }
    }
    // Per request: generation keys on GenerateRequest (the loop's own keys there, the others
    // on its GeneratorParams, which refuses the loop's), embed.* keys on EmbedRequest.
    GenerateRequest gr;
    GeneratorParams gp;
    EmbedRequest er;
    const bool embed_key = key.starts_with("embed.");
    const bool loop_key =
        key == "max_new_tokens" || key == "stop" || key == "add_generation_prompt";
    // Free text: any string is a regex or a literal (checked when a generator compiles it).
    const bool free_text = key == "regex" || key == "grammar" || key == "constraint_prefix" ||
                           key == "constraint_suffix" || key == "constraint_trigger";
    if (HasScope(s, OptionScope::kRequest) && !embed_key) {
      EXPECT_NO_THROW(gr.Set(key, v));
      if (!free_text) {
        EXPECT_THROW(gr.Set(key, key == "stop" ? "" : "not-a-value"), Error);
      }
      if (loop_key) {
        EXPECT_THROW(gp.Set(key, v), Error);
      } else {
        EXPECT_NO_THROW(gp.Set(key, v));
      }
    } else {
      EXPECT_THROW(gr.Set(key, v), Error);
      EXPECT_THROW(gp.Set(key, v), Error);
    }
    if (HasScope(s, OptionScope::kRequest) && embed_key) {
      EXPECT_NO_THROW(er.Set(key, v));
      EXPECT_THROW(er.Set(key, "not-a-value"), Error);
    } else {
      EXPECT_THROW(er.Set(key, v), Error);
    }
    // Run options, on a loaded model.
    if (HasScope(s, OptionScope::kRunOption)) {
      EXPECT_NO_THROW(model->runtime().SetRunOption(key, v));
      model->runtime().ClearRunOption(key);
    }
  }
}

// The threads alive in this process (ORT's intra-op workers among them).
int Tasks() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(SessionThreads, WithoutIntraOpNumThreadsASessionRunsOnThePhysicalCores) {
  // ORT's own default gave one thread (no worker) on a 2-vCPU AMD EPYC VM; ebb's default is the
  // physical cores the process may use: one intra-op worker fewer than that (the caller runs too).
  ModelOptions one, unset;
  for (ModelOptions* o : {&one, &unset}) {
    o->Set("model_cache.dir", "off");
    o->Set("memory.release_weights_on_pressure", "false");
  }
  one.Set("session_options.intra_op_num_threads", "1");
  int with_one = 0, with_default = 0;
  {
    auto m = ebb::LoadModel(Tiny(), one);
    with_one = Tasks();
  }
  {
    auto m = ebb::LoadModel(Tiny(), unset);
    with_default = Tasks();
  }
  EXPECT_EQ(with_default - with_one, internal::DefaultIntraOpThreads() - 1)
      << "default " << internal::DefaultIntraOpThreads() << " threads";
}

TEST(OptionTable, DocsOptionsMdEmbedsTheGeneratedTable) {
  const std::string doc = ReadFile(std::filesystem::path(EBB_SOURCE_DIR) / "docs/options.md");
  const std::string begin = "<!-- BEGIN GENERATED: ebb options --markdown -->\n";
  const std::string end = "<!-- END GENERATED -->";
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/options.md lacks the generated table's markers";
  ASSERT_NE(e, std::string::npos);
  const std::string embedded = doc.substr(b + begin.size(), e - b - begin.size());
  const auto r = testing::RunCli("options --markdown");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(embedded, r.out) << "regenerate the table: ebb options --markdown";
  for (const auto& s : OptionTable()) {
    EXPECT_NE(doc.find("`" + std::string(s.key) + "`"), std::string::npos) << s.key;
  }
}

TEST(OptionTable, PlainOptionsPrintsAnAlignedTableWithScopeTypeUnitDefault) {
  // Issue 27: `ebb options` printed key names only, while its help promised the table.
  const auto r = testing::RunCli("options");
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream in(r.out);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("KEY", 0), 0u) << header;
  const size_t scope_col = header.find("SCOPE");
  const size_t type_col = header.find("TYPE");
  const size_t unit_col = header.find("UNIT");
  const size_t default_col = header.find("DEFAULT");
  ASSERT_NE(default_col, std::string::npos) << header;
  ASSERT_TRUE(scope_col < type_col && type_col < unit_col && unit_col < default_col) << header;
  std::map<std::string, std::string> row_of;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == ' ') {
      EXPECT_LE(line.size(), 100u) << line;  // wrapped description lines
      continue;
    }
    row_of[line.substr(0, line.find(' '))] = line;
  }
  for (const auto& s : OptionTable()) {
    const auto it = row_of.find(std::string(s.key));
    ASSERT_NE(it, row_of.end()) << s.key << " has no row";
    const std::string& row = it->second;
    ASSERT_GE(row.size(), default_col) << row;
    // Each cell starts in its header's column.
    EXPECT_EQ(row.substr(type_col, OptionTypeName(s.type).size()), OptionTypeName(s.type)) << row;
    EXPECT_EQ(row.substr(default_col), s.default_value) << row;
    if (!s.unit.empty()) {
      EXPECT_EQ(row.substr(unit_col, s.unit.size()), s.unit) << row;
    }
    EXPECT_NE(row[scope_col], ' ') << row;
  }
  EXPECT_THAT(testing::RunCli("options --keys").out, HasSubstr("--option KEY=V (model load)"));
}

TEST(OptionTable, GenerateHelpListsEveryKeyOfItsScopes) {
  const auto r = testing::RunCli("generate --help");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const auto& s : OptionTable()) {
    EXPECT_THAT(r.out, HasSubstr(" " + std::string(s.key))) << s.key;
  }
  EXPECT_THAT(r.out, HasSubstr("memory.shrink_every"));  // was missing from --help before
}

TEST(Options, CliRangeErrorsReadWellNever309Digits) {
  // Regression (issue 16): CLI11's NonNegativeNumber printed its bound as 309 digits.
  const std::string base = "generate " + Tiny().string() + " --input-ids 1,2 ";
  for (const char* bad :
       {"--max-length -1", "--max-new-tokens -5", "--top-p 2", "--temperature nan", "--top-k -1"}) {
    const auto r = testing::RunCli(base + bad);
    EXPECT_NE(r.status, 0) << bad;
    EXPECT_EQ(r.out.find("17976931348623157"), std::string::npos) << bad << ": " << r.out;
    EXPECT_LT(r.out.size(), 400u) << bad << ": " << r.out;
  }
  EXPECT_THAT(testing::RunCli(base + "--max-length -1").out, HasSubstr("0 to 2147483647"));
  EXPECT_THAT(testing::RunCli(base + "--top-p 2").out, HasSubstr("from 0 to 1"));
}

TEST(Options, DeepJsonInGenerateMessagesAndTokenizeJsonlIsRefusedNotACrash) {
  // Regression (issue 16): the CLI's own JSON inputs went around the one depth limit.
  const auto path = std::filesystem::temp_directory_path() / "ebb-deep-messages.json";
  std::ofstream(path) << std::string(100000, '[') << std::string(100000, ']');
  const auto r = testing::RunCli("generate " + Tiny().string() + " --messages " + path.string());
  EXPECT_EQ(r.status, 1) << r.out.substr(0, 300);
  EXPECT_THAT(r.out, HasSubstr("nested deeper than"));
  const auto t = testing::RunCli("tokenize " + Tiny().string() + " --jsonl < " + path.string());
  EXPECT_EQ(t.status, 1) << t.out.substr(0, 300);
  EXPECT_THAT(t.out, HasSubstr("nested deeper than"));
  std::filesystem::remove(path);
}

TEST(Options, MisspelledEbbKeyFailsWithASuggestion) {
  ModelOptions o;
  try {
    o.Set("kv_cache.mdoe", "dynamic");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'kv_cache.mode'"));
  }
  GeneratorParams p;
  try {
    p.Set("temprature", "0.7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'temperature'"));
  }
  try {
    o.Set("temperature", "0.7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a request option, not a model option"));
  }
  try {
    p.Set("top_p", "nan");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("finite number from 0 to 1"));
  }
  EXPECT_THROW(o.Set("session_options.enable_cpu_mem_arena", "maybe"), Error);
  EXPECT_NO_THROW(o.Set("session_options.enable_cpu_mem_arena", "False")) << "one bool spelling";
}

using testing::LogCapture;

TEST(Options, MisspelledSessionKeyLoadsWithAWarningNamingTheKnownKey) {
  LogCapture logs(LogLevel::Warn);  // ORT's own keys are said at info, and must not be warned of
  ModelOptions o;
  o.Set("session_options.enable_cpu_mem_arna", "0");
  o.Set("session_options.max_mem", "1GiB");
  o.Set("session_options.session.disable_prepacking", "0");  // documented by ORT: no warning
  auto m = ebb::LoadModel(Tiny(), o);
  const std::string text = logs.Text();
  EXPECT_THAT(text, HasSubstr("'enable_cpu_mem_arna'"));
  EXPECT_THAT(text, HasSubstr("did you mean 'enable_cpu_mem_arena'"));
  EXPECT_THAT(text, HasSubstr("did you mean 'arena.max_mem'"));
  EXPECT_EQ(text.find("session.disable_prepacking"), std::string::npos) << text;
  EXPECT_TRUE(internal::IsKnownOrtSessionKey("session.use_device_allocator_for_initializers"));
  EXPECT_TRUE(internal::IsKnownOrtRunKey("memory.enable_memory_arena_shrinkage"));
}

// A copy of the tiny model whose genai_config.json has `search` = `search_json`.
std::filesystem::path WithSearch(const std::string& name, const std::string& search_json) {
  const auto dir = std::filesystem::temp_directory_path() / ("ebb-search-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Tiny(), dir, std::filesystem::copy_options::recursive);
  auto cfg = nlohmann::json::parse(ReadFile(dir / "genai_config.json"));
  cfg["search"] = nlohmann::json::parse(search_json);
  std::ofstream(dir / "genai_config.json") << cfg.dump(2);
  return dir;
}

TEST(SearchDefaults, TheConfigSearchBlockIsTheDefaultAndTheCallerWins) {
  const auto dir = WithSearch("len20", R"({"max_length": 20, "do_sample": false})");
  auto m = ebb::LoadModel(dir);
  {
    Generator g(m, GeneratorParams{});
    g.AppendTokens(std::vector<int32_t>{5, 17, 42});
    while (!g.done()) g.GenerateNextToken();
    EXPECT_EQ(g.sequence(0).size(), 20u) << "search.max_length with no parameter given";
  }
  {
    Generator g(m, GeneratorParams{.max_length = 9});
    g.AppendTokens(std::vector<int32_t>{5, 17, 42});
    while (!g.done()) g.GenerateNextToken();
    EXPECT_EQ(g.sequence(0).size(), 9u) << "the caller's value wins";
  }
  // CLI: no flags -> the config's 20 tokens.
  const auto r = testing::RunCli("generate " + dir.string() + " --input-ids 5,17,42 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["sequences"][0].size(), 20u);
  std::filesystem::remove_all(dir);
}

TEST(SearchDefaults, SamplingSettingsComeFromTheConfigUnlessGiven) {
  // A config that samples with a fixed seed: a generator with no parameters samples (its tokens
  // differ from greedy), and do_sample=false from the caller restores greedy.
  const auto dir =
      WithSearch("sample", R"({"max_length": 24, "do_sample": true, "temperature": 5.0})");
  auto greedy_model = ebb::LoadModel(Tiny());
  auto m = ebb::LoadModel(dir);
  auto run = [](const std::shared_ptr<Model>& model, GeneratorParams p) {
    Generator g(model, p);
    g.AppendTokens(std::vector<int32_t>{5, 17, 42});
    while (!g.done()) g.GenerateNextToken();
    return std::vector<int32_t>(g.sequence(0).begin(), g.sequence(0).end());
  };
  const auto greedy = run(greedy_model, {.max_length = 24});
  EXPECT_NE(run(m, {.seed = 7}), greedy) << "the config's do_sample/temperature apply";
  GeneratorParams p{.max_length = 24};
  p.Set("do_sample", "false");
  EXPECT_EQ(run(m, p), greedy) << "the caller's do_sample wins";
  std::filesystem::remove_all(dir);
}

TEST(RunOptions, OrtShrinkageKeyShrinksAtTheEndOfEveryStepAndEmptyStopsIt) {
  // ORT counts a shrinkage when it frees a region. A 1024-token prompt in 128-token chunks on
  // the wide model extends the arena in every chunk's Run(); with the key set, each of those
  // Runs gives its extension back at its end, so the count moves once per step, not once per
  // request as ebb's ShrinkAfterNextRun does.
  auto m = ebb::LoadModel(testing::TestModelsDir() / "llama-wide");
  std::vector<int32_t> prompt(1024);
  for (int i = 0; i < 1024; ++i) prompt[i] = (i * 37 + 11) % 1024;
  auto request = [&] {
    GeneratorParams p{.max_length = 1030};
    p.Set("prefill_chunk_size", "128");
    Generator g(m, p);
    g.AppendTokens(prompt);
    while (!g.done()) g.GenerateNextToken();
  };
  request();  // warm-up: the arena exists
  auto shrinkages = [&] { return m->runtime().Stats().cpu_arena.num_shrinkages; };
  const int64_t s0 = shrinkages();
  request();
  const int64_t s1 = shrinkages();
  EXPECT_EQ(s1, s0) << "without the key nothing shrinks";
  const uint64_t ebb_shrinks = m->runtime().Stats().num_shrinks;
  m->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "cpu:0");
  EXPECT_EQ(m->runtime().Options().at("memory.enable_memory_arena_shrinkage"), "cpu:0");
  request();
  const int64_t s2 = shrinkages();
  EXPECT_GE(s2 - s1, 8) << "one per prefill chunk (8 Runs), each of which extended the arena";
  EXPECT_EQ(m->runtime().Stats().num_shrinks, ebb_shrinks) << "ORT's shrink, not ebb's policy";
  m->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "");
  EXPECT_EQ(m->runtime().Options().count("memory.enable_memory_arena_shrinkage"), 0u);
  request();
  EXPECT_EQ(shrinkages(), s2) << "'' turns it off";
}

TEST(RunOptions, OrtShrinkageKeyNamingADeviceWithoutAnArenaIsAClearError) {
  ModelOptions off;
  off.Set("session_options.enable_cpu_mem_arena", "0");
  auto m = ebb::LoadModel(Tiny(), off);
  try {
    m->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "cpu:0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("enable_cpu_mem_arena=0"));
  }
  auto on = ebb::LoadModel(Tiny());
  try {
    on->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "gpu:0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no GPU execution provider"));
  }
  EXPECT_THROW(on->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "cpu"), Error);
  // As a load option the same check fails the load, not a later Run().
  ModelOptions bad = off;
  bad.Set("run_options.memory.enable_memory_arena_shrinkage", "cpu:0");
  EXPECT_THROW(ebb::LoadModel(Tiny(), bad), Error);
}

// Issue 22 bug 1: the GPU check reads the providers the session really runs on. A config that
// lists cuda, loaded with execution_provider=cpu, runs on CPU: a gpu:0 shrink key is refused at
// load naming that, not accepted and left to fail every Run().
TEST(RunOptions, AGpuShrinkKeyIsRefusedWhenExecutionProviderCpuReplacesTheConfigsCuda) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb-config-cuda";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Tiny(), dir, std::filesystem::copy_options::recursive);
  auto cfg = nlohmann::json::parse(ReadFile(dir / "genai_config.json"));
  cfg["model"]["decoder"]["session_options"]["provider_options"] =
      nlohmann::json::parse(R"([{"cuda": {"enable_cuda_graph": "0"}}])");
  std::ofstream(dir / "genai_config.json") << cfg.dump(2);
  ModelOptions o;
  o.Set("execution_provider", "cpu");
  o.Set("run_options.memory.enable_memory_arena_shrinkage", "gpu:0");
  try {
    ebb::LoadModel(dir, o);
    FAIL() << "a gpu:0 shrink key on a CPU session was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("runs on cpu (execution_provider=cpu)"));
  }
  // The same options with cpu:0 load and run.
  ModelOptions ok;
  ok.Set("execution_provider", "cpu");
  ok.Set("run_options.memory.enable_memory_arena_shrinkage", "cpu:0");
  auto m = ebb::LoadModel(dir, ok);
  Generator g(m, GeneratorParams{});
  g.AppendTokens(std::vector<int32_t>{1, 2, 3});
  g.GenerateNextToken();
  std::filesystem::remove_all(dir);
}

TEST(ShrinkController, ARunOptionOrtRefusesDoesNotBlockIdleShrinksForever) {
  // Regression: BeginRun raised in_flight_ before building the run options; one throw left the
  // controller believing a step was running, so every later idle shrink waited for it forever.
  auto m = ebb::LoadModel(Tiny());
  Generator(m, GeneratorParams{.max_length = 8}).AppendTokens(std::vector<int32_t>{1, 2});
  // The public route refuses such a key at once (ModelControls::SetRunOption); the
  // controller below it is what this regression is about, so the key goes in under the check.
  EXPECT_THROW(m->runtime().SetRunOption(std::string(5000, 'k'), "1"), Error);
  internal::RunView(*m).shrink().SetRunOption(std::string(5000, 'k'), "1");  // ORT refuses it
  {
    Generator g(m, GeneratorParams{.max_length = 8});
    EXPECT_THROW(g.AppendTokens(std::vector<int32_t>{1, 2}), Error);
  }
  m->runtime().ClearRunOption(std::string(5000, 'k'));
  const auto before = m->runtime().Stats();
  m->runtime().ShrinkArena();
  const auto after = m->runtime().Stats();
  EXPECT_EQ(after.num_shrinks, before.num_shrinks + 1)
      << "the idle shrink ran now instead of waiting for a step that never comes";
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

// Issue 22, bug 4: one key, two validators. `--session-option execution_mode=ORT_SEQUENTIAL`
// was refused ("not one of: sequential parallel") while the same value in genai_config.json's
// session_options loaded (BuildSessionOptions had its own, wider, list); arena_extend_strategy=1
// likewise. Now the table's enum rows carry ORT's spellings and both paths use them.
TEST(OptionTableIssue22, OrtSpellingsMeanTheSameOnTheCliAndInGenaiConfig) {
  const std::vector<std::pair<std::string, std::string>> ort_spellings = {
      {"execution_mode", "ORT_SEQUENTIAL"},
      {"execution_mode", "ORT_PARALLEL"},
      {"arena_extend_strategy", "0"},
      {"arena_extend_strategy", "1"},
      {"graph_optimization_level", "ORT_ENABLE_BASIC"},
      {"graph_optimization_level", "99"},
  };
  for (const auto& [key, value] : ort_spellings) {
    SCOPED_TRACE(key + "=" + value);
    ModelOptions cli;
    EXPECT_NO_THROW(cli.Set("session_options." + key, value));
    EXPECT_NO_THROW(internal::BuildSessionOptions(
        internal::EffectiveSessionOptions({{key, value}}, ModelOptions{}), {}, ModelOptions{}));
    if (key == "arena_extend_strategy") {
      RuntimeOptions ro;
      EXPECT_NO_THROW(ro.Set(key, value));
    }
  }
  // A value neither spelling knows is refused by both, with the same words.
  for (const std::string key : {"execution_mode", "arena_extend_strategy"}) {
    SCOPED_TRACE(key);
    std::string from_set, from_config;
    try {
      ModelOptions cli;
      cli.Set("session_options." + key, "ORT_SOMETIMES");
    } catch (const Error& e) {
      from_set = e.what();
    }
    try {
      internal::BuildSessionOptions(
          internal::EffectiveSessionOptions({{key, "ORT_SOMETIMES"}}, ModelOptions{}), {},
          ModelOptions{});
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      from_config = e.what();
    }
    ASSERT_FALSE(from_set.empty()) << "Set accepted ORT_SOMETIMES";
    ASSERT_FALSE(from_config.empty()) << "the config path accepted ORT_SOMETIMES";
    EXPECT_THAT(from_config, HasSubstr(from_set));
  }
}

// The same through a model folder: ORT_PARALLEL and arena_extend_strategy=1 in genai_config.json
// load, as they do from --session-option.
TEST(OptionTableIssue22, OrtSpellingsInGenaiConfigLoadAsFromTheCli) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb-config-ort-spellings";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Tiny(), dir, std::filesystem::copy_options::recursive);
  auto cfg = nlohmann::json::parse(ReadFile(dir / "genai_config.json"));
  cfg["model"]["decoder"]["session_options"]["execution_mode"] = "ORT_PARALLEL";
  std::ofstream(dir / "genai_config.json") << cfg.dump(2);
  EXPECT_NO_THROW(ebb::LoadModel(dir));
  ModelOptions cli;
  cli.Set("session_options.execution_mode", "ORT_PARALLEL");
  EXPECT_NO_THROW(ebb::LoadModel(Tiny(), cli));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
