// Tier 1 / Tier 2 memory controls: options that take effect, passthrough and its errors, shrink
// now / after the next request / every N, arena off, failed loads, concurrency.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <type_traits>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/log.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/process_memory.h"
#include "ebb/stats.h"
#include "log_capture.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kMiB = 1 << 20;

std::filesystem::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }
// Wide activations: a long prompt grows ORT's arena far beyond its first region.
std::filesystem::path Wide() { return testing::TestModelsDir() / "llama-wide"; }

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = (i * 37 + 11) % vocab;
  return p;
}

std::vector<int32_t> Generate(const std::shared_ptr<Model>& model,
                              const std::vector<int32_t>& prompt, int max_length) {
  GeneratorParams p;
  p.max_length = max_length;
  Generator g(model, p);
  g.AppendTokens(prompt);
  while (!g.done()) g.GenerateNextToken();
  return {g.sequence(0).begin(), g.sequence(0).end()};
}

int ThreadCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// --- Options take effect --------------------------------------------------------------------

TEST(Tier1, ArenaOffLeavesNoArenaStats) {
  ModelOptions on, off;
  off.Set("session_options.enable_cpu_mem_arena", "0");
  auto a = ebb::LoadModel(Tiny(), on);
  auto b = ebb::LoadModel(Tiny(), off);
  Generate(a, {1, 2, 3}, 8);
  Generate(b, {1, 2, 3}, 8);
  EXPECT_TRUE(a->runtime().Stats().cpu_arena.available);
  EXPECT_GT(a->runtime().Stats().cpu_arena.total_allocated_bytes, 0);
  EXPECT_FALSE(b->runtime().Stats().cpu_arena.available);
}

// Issue 24 item 16a: the exact call of the request that started ebb loads, with a warning that
// the strategy is moot without an arena (named as written, not as its enum value); an arena
// size with the arena off is still refused, naming the names.
TEST(Tier1, ArenaOffWithAnExtendStrategyLoadsAndWarnsThatTheStrategyIsMoot) {
  ModelOptions o;
  o.Set("session_options.enable_cpu_mem_arena", "0");
  o.Set("session_options.arena_extend_strategy", "kSameAsRequested");
  std::shared_ptr<Model> m;
  {
    testing::LogCapture logs(LogLevel::Warn);
    EXPECT_NO_THROW(m = ebb::LoadModel(Tiny(), o));
    EXPECT_THAT(logs.Text(), HasSubstr("arena_extend_strategy=kSameAsRequested has no effect with "
                                       "enable_cpu_mem_arena=0"));
  }
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->runtime().Stats().cpu_arena.available);
  EXPECT_EQ(Generate(m, {5, 17, 42}, 10).size(), 10u);

  ModelOptions capped;
  capped.Set("session_options.enable_cpu_mem_arena", "0");
  capped.Set("session_options.arena_extend_strategy", "kSameAsRequested");
  capped.Set("session_options.arena.max_mem", "64MiB");
  try {
    ebb::LoadModel(Tiny(), capped);
    FAIL() << "loaded an arena cap with the arena off";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("max_mem=67108864"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("enable_cpu_mem_arena=0"));
  }
}

TEST(Tier1, IntraOpThreadsChangesTheThreadCount) {
  const int base = ThreadCount();
  int with_one = 0, with_two = 0;
  {
    ModelOptions o;
    o.Set("session_options.intra_op_num_threads", "1");
    auto m = ebb::LoadModel(Tiny(), o);
    with_one = ThreadCount() - base;
  }
  {
    ModelOptions o;
    o.Set("session_options.intra_op_num_threads", "2");
    auto m = ebb::LoadModel(Tiny(), o);
    with_two = ThreadCount() - base;
  }
  // ORT's intra-op pool has n-1 worker threads (the caller is the n-th).
  EXPECT_EQ(with_two - with_one, 1);
}

// --- Passthrough and errors -------------------------------------------------------------------

TEST(Tier1, UnknownSessionKeyReachesOrtAndIsLogged) {
  ModelOptions o;
  o.Set("session_options.session.use_device_allocator_for_initializers", "1");
  std::shared_ptr<Model> m;
  {
    testing::LogCapture logs;  // info: a passthrough key is said, not warned of
    m = ebb::LoadModel(Tiny(), o);
    EXPECT_THAT(logs.Text(), HasSubstr("session.use_device_allocator_for_initializers='1' -> ORT "
                                       "session config entry"));
  }
  EXPECT_EQ(Generate(m, {5, 17, 42}, 10).size(), 10u);
}

TEST(Tier1, ValueOrtRefusesFailsTheLoadNamingTheKey) {
  ModelOptions o;
  o.Set("session_options.session.dynamic_block_base", "not-a-number");
  try {
    ebb::LoadModel(Tiny(), o);
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(),
                HasSubstr("session.dynamic_block_base='not-a-number' refused by ONNX Runtime"));
  }
  ModelOptions t;
  try {
    t.Set("session_options.intra_op_num_threads", "-3");
    ebb::LoadModel(Tiny(), t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("intra_op_num_threads='-3'"));
  }
}

TEST(Tier1, TwentyFailedLoadsLeakNothing) {
  ModelOptions bad;
  bad.Set("session_options.session.dynamic_block_base", "not-a-number");
  for (int i = 0; i < 3; ++i) EXPECT_THROW(ebb::LoadModel(Tiny(), bad), Error);  // warm up
  const int64_t before = ReadProcessMemory().rss_bytes;
  for (int i = 0; i < 20; ++i) EXPECT_THROW(ebb::LoadModel(Tiny(), bad), Error);
  EXPECT_LE(ReadProcessMemory().rss_bytes - before, 8 * kMiB);
}

// --- Tier 2: shrinking --------------------------------------------------------------------------

TEST(Tier2, ShrinkArenaGivesBackWhatALongPromptAdded) {
  auto m = ebb::LoadModel(Wide());
  Generate(m, {1, 2, 3}, 8);  // warm up ORT
  const int64_t before = ReadProcessMemory().rss_bytes;
  const int64_t shrinks_before = m->runtime().Stats().cpu_arena.num_shrinkages;
  {
    GeneratorParams p;
    p.max_length = 2048;
    p.prefill_chunk_size = 0;  // one 2040-token Run: its activations grow the arena
    Generator g(m, p);
    g.AppendTokens(Prompt(2040, m->info().vocab_size));
  }
  const int64_t peak = ReadProcessMemory().rss_bytes;
  ASSERT_GT(peak - before, 16 * kMiB) << "the prompt should have grown the arena";
  m->runtime().ShrinkArena();
  const int64_t after = ReadProcessMemory().rss_bytes;
  const MemoryStats s = m->runtime().Stats();
  EXPECT_GE(static_cast<double>(peak - after), 0.8 * static_cast<double>(peak - before))
      << "before " << before << " peak " << peak << " after " << after;
  EXPECT_GT(s.cpu_arena.num_shrinkages, shrinks_before);
  EXPECT_EQ(s.num_shrinks, 1u);
}

// ORT counts freed regions (NumArenaShrinkages), not shrink events, so the cross-check is: ORT's
// counter moves in exactly the requests where ebb shrank (each request grows the arena first).
struct ShrinkTrace {
  std::vector<bool> ebb;  // per request: did ebb's counter rise?
  std::vector<bool> ort;  // per request: did ORT's counter rise?
};

ShrinkTrace RunRequests(const std::shared_ptr<Model>& m, int n) {
  ShrinkTrace t;
  for (int i = 0; i < n; ++i) {
    const MemoryStats before = m->runtime().Stats();
    Generate(m, Prompt(300 + 16 * i, 1024), 364 + 16 * i);  // a 64-token request
    const MemoryStats after = m->runtime().Stats();
    t.ebb.push_back(after.num_shrinks > before.num_shrinks);
    t.ort.push_back(after.cpu_arena.num_shrinkages > before.cpu_arena.num_shrinkages);
  }
  return t;
}

TEST(Tier2, ShrinkAfterNextRunFiresOnceAtTheEndOfTheRequest) {
  auto m = ebb::LoadModel(Wide());
  Generate(m, {1, 2, 3}, 8);
  m->runtime().ShrinkAfterNextRun();
  const ShrinkTrace t = RunRequests(m, 2);  // one shrink for the whole request, none after
  EXPECT_EQ(t.ebb, (std::vector<bool>{true, false}));
  EXPECT_EQ(t.ort, t.ebb);
  EXPECT_EQ(m->runtime().Stats().num_shrinks, 1u);
}

TEST(Tier2, ShrinkEveryFiveOverFifteenRequestsShrinksThreeTimes) {
  auto m = ebb::LoadModel(Wide());
  Generate(m, {1, 2, 3}, 8);
  const MemoryStats s0 = m->runtime().Stats();
  m->runtime().ShrinkEvery(5);
  const ShrinkTrace t = RunRequests(m, 15);
  std::vector<bool> want(15, false);
  want[4] = want[9] = want[14] = true;
  EXPECT_EQ(t.ebb, want);
  EXPECT_EQ(t.ort, want);
  const MemoryStats s = m->runtime().Stats();
  EXPECT_EQ(s.num_shrinks - s0.num_shrinks, 3u);
  EXPECT_EQ(s.num_requests - s0.num_requests, 15u);
  m->runtime().ShrinkEvery(0);
  for (int i = 0; i < 5; ++i) Generate(m, Prompt(8, 1024), 16);
  EXPECT_EQ(m->runtime().Stats().num_shrinks, s.num_shrinks);
}

TEST(Tier2, ShrinkEveryAsALoadOption) {
  ModelOptions o;
  o.Set("memory.shrink_every", "2");
  auto m = ebb::LoadModel(Tiny(), o);
  for (int i = 0; i < 4; ++i) Generate(m, {1, 2, 3}, 8);
  EXPECT_EQ(m->runtime().Stats().num_shrinks, 2u);
}

TEST(Tier2, ArenaOffShrinkSucceedsAndTrimsWhatEbbOwns) {
  ModelOptions o;
  o.Set("session_options.enable_cpu_mem_arena", "0");
  o.Set("kv_cache.retain_bytes", "64MiB");
  auto m = ebb::LoadModel(Tiny(), o);
  const auto expected = Generate(m, {5, 17, 42}, 16);
  EXPECT_GT(m->kv_stats().reserved_bytes, 0u) << "retained for reuse";
  m->runtime().ShrinkArena();
  EXPECT_EQ(m->kv_stats().reserved_bytes, 0u) << "the shrink trims the KV pool";
  m->runtime().ShrinkEvery(1);
  m->runtime().ShrinkAfterNextRun();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Generate(m, {5, 17, 42}, 16), expected);
  EXPECT_EQ(m->runtime().Stats().num_shrinks, 4u);
  EXPECT_FALSE(m->runtime().Stats().cpu_arena.available);
}

TEST(Tier2, RunOptionsAreForwardedAndCleared) {
  auto m = ebb::LoadModel(Tiny());
  m->runtime().SetRunOption("disable_synchronize_execution_providers", "1");
  EXPECT_EQ(m->runtime().Options().at("disable_synchronize_execution_providers"), "1");
  EXPECT_EQ(Generate(m, {5, 17, 42}, 10).size(), 10u);
  m->runtime().ClearRunOption("disable_synchronize_execution_providers");
  EXPECT_EQ(m->runtime().Options().count("disable_synchronize_execution_providers"), 0u);
}

// Issue 38: one name for a model's controls, Model::runtime() (the Python SDK's model.runtime),
// and one for its figures, runtime().Stats(); a const Model reads them through the same object.
TEST(Tier2, RuntimeIsTheOneHandleAndConstModelsReadItsStats) {
  auto m = ebb::LoadModel(Tiny());
  const Model& cm = *m;
  EXPECT_EQ(&cm.runtime(), &m->runtime());
  m->runtime().ShrinkEvery(3);
  EXPECT_EQ(cm.runtime().Stats().shrink_every, 3u);
  EXPECT_EQ(cm.runtime().Stats().weights_bytes, cm.weights_bytes());
}

// Issue 24 items 11-14: one route for every Tier 2 key on every surface (they all call
// ModelControls::SetRunOption): an ebb policy key is applied as the policy and readable from the
// stats; a load-time key is refused naming where it belongs; a misspelled ORT key warns with a
// suggestion; empty, oversize and non-UTF-8 keys are refused at once, and the model still serves.
TEST(Tier2, EveryTier2KeyTakesOneRouteAndThePoliciesAreReadable) {
  auto m = ebb::LoadModel(Tiny());
  ModelControls h = m->runtime();
  h.SetRunOption("memory.shrink_every", "2");
  h.SetRunOption("memory.shrink_above", "64GiB");
  EXPECT_EQ(h.Options().count("memory.shrink_every"), 0u) << "not stored as an ORT run option";
  MemoryStats st = h.Stats();
  EXPECT_EQ(st.shrink_every, 2u);
  EXPECT_EQ(st.shrink_above_bytes, 64ull << 30);
  EXPECT_FALSE(st.ort_shrink_every_run);
  const uint64_t base = st.num_shrinks;
  for (int i = 0; i < 4; ++i) Generate(m, {5, 17, 42}, 8);
  EXPECT_EQ(h.Stats().num_shrinks, base + 2) << "memory.shrink_every=2 over 4 requests";
  EXPECT_THAT(ToJson(h.Stats()), HasSubstr("\"policies\":{\"shrink_every\":2,"));

  h.SetRunOption("memory.enable_memory_arena_shrinkage", "cpu:0");
  EXPECT_TRUE(h.Stats().ort_shrink_every_run);
  EXPECT_EQ(Generate(m, {5, 17, 42}, 8).size(), 8u);

  auto refused = [&](const std::string& key, const std::string& value, const char* needle) {
    try {
      h.SetRunOption(key, value);
      ADD_FAILURE() << "accepted '" << key << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(needle)) << key;
    }
  };
  refused("kv_cache.mode", "static", "is a model option, set at load");
  refused("temperature", "0.5", "a request option");
  refused("", "1", "a key is 1 to 1024 bytes");
  refused(std::string(1025, 'k'), "1", "a key is 1 to 1024 bytes");
  refused("x", std::string(4097, 'v'), "at most 4096");
  refused("bad\xff", "1", "valid UTF-8");
  refused("memory.shrink_every", "-1", "memory.shrink_every");
  EXPECT_EQ(h.Options().size(), 1u) << "nothing else was set";

  {
    testing::LogCapture logs(LogLevel::Warn);
    h.SetRunOption("memory.enable_memory_arena_shrinkag", "cpu:0");
    EXPECT_THAT(logs.Text(), HasSubstr("did you mean 'memory.enable_memory_arena_shrinkage'"));
  }
  EXPECT_EQ(Generate(m, {5, 17, 42}, 8).size(), 8u) << "the model still serves";
}

TEST(Tier2, StatsSerializeToJson) {
  auto m = ebb::LoadModel(Tiny());
  Generate(m, {5, 17, 42}, 10);
  const std::string j = ToJson(m->runtime().Stats());
  for (const char* key : {"\"rss_bytes\"", "\"anon_bytes\"", "\"in_use_bytes\"",
                          "\"total_allocated_bytes\"", "\"num_shrinkages\"", "\"num_shrinks\""}) {
    EXPECT_THAT(j, HasSubstr(key));
  }
  EXPECT_GT(m->runtime().Stats().process.rss_bytes, 0);
}

// --- Concurrency --------------------------------------------------------------------------------

TEST(Concurrency, GeneratorsOnFourThreadsWhileAnotherShrinksAndReadsStats) {
  auto m = ebb::LoadModel(Tiny());
  std::vector<std::vector<int32_t>> prompts, expected;
  for (int t = 0; t < 4; ++t) {
    prompts.push_back(Prompt(10 + 7 * t, 1024));
    expected.push_back(Generate(m, prompts.back(), 48));
  }
  std::atomic<bool> stop{false};
  std::thread meddler([&] {
    int i = 0;
    while (!stop) {
      m->runtime().ShrinkArena();
      m->runtime().SetRunOption("ebb.test", std::to_string(i++));
      (void)m->runtime().Stats();
    }
  });
  std::vector<std::thread> workers;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) mismatches[t] += Generate(m, prompts[t], 48) != expected[t];
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  meddler.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_GT(m->runtime().Stats().num_shrinks, 0u);
  EXPECT_EQ(m->kv_stats().in_use_bytes, 0u);
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

// Total ORT arena bytes after one long prompt on a fresh model with `opts`.
int64_t ArenaAfterLongPrompt(ModelOptions opts) {
  auto m = ebb::LoadModel(Wide(), opts);
  GeneratorParams p;
  p.max_length = 1100;
  Generator g(m, p);
  g.AppendTokens(Prompt(1000, m->info().vocab_size));
  return m->runtime().Stats().cpu_arena.total_allocated_bytes;
}

TEST(Tier1Arena, SameAsRequestedAllocatesLessThanNextPowerOfTwo) {
  ModelOptions pow2, same;
  pow2.Set("session_options.arena_extend_strategy", "kNextPowerOfTwo");
  same.Set("session_options.arena_extend_strategy", "kSameAsRequested");
  const int64_t a = ArenaAfterLongPrompt(pow2);  // each model unloads before the next loads
  const int64_t b = ArenaAfterLongPrompt(same);
  EXPECT_GT(a, 0);
  EXPECT_GT(b, 0);
  EXPECT_LT(b, a) << "kSameAsRequested " << b << " vs kNextPowerOfTwo " << a;
}

TEST(Tier1Arena, MaxMemIsAHardCapWithAClearErrorAndSmallPromptsStillWork) {
  ModelOptions o;
  o.Set("session_options.arena.max_mem", "24MiB");
  auto m = ebb::LoadModel(Wide(), o);
  EXPECT_EQ(m->runtime().Stats().cpu_arena.limit_bytes, 24 << 20);
  const auto small = Generate(m, {5, 17, 42}, 16);
  EXPECT_EQ(small.size(), 16u);
  {
    GeneratorParams p;
    p.max_length = 2100;
    p.prefill_chunk_size = 0;  // one 2040-token Run needs more than the cap
    Generator g(m, p);
    try {
      g.AppendTokens(Prompt(2040, m->info().vocab_size));
      FAIL() << "expected ResourceExhausted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("arena.max_mem=25165824"));
      EXPECT_THAT(
          e.what(),
          HasSubstr("set prefill_chunk_size (now 0: the whole prompt in one Run), e.g. 256"));
    }
  }
  EXPECT_EQ(Generate(m, {5, 17, 42}, 16), small) << "the model stays usable under the cap";
  {
    // The default prefill_chunk_size (256) feeds the same prompt in 8 Runs whose activations
    // fit under the cap.
    GeneratorParams p;
    p.max_length = 2100;
    Generator g(m, p);
    EXPECT_NO_THROW(g.AppendTokens(Prompt(2040, m->info().vocab_size)));
    EXPECT_NO_THROW(g.GenerateNextToken());
  }
}

TEST(Tier1Arena, ArenaOptionsAreProcessWideAndConflictsAreRefused) {
  ModelOptions a, b;
  a.Set("session_options.arena.max_mem", "256MiB");
  b.Set("session_options.arena.max_mem", "128MiB");
  auto first = ebb::LoadModel(Wide(), a);
  auto same = ebb::LoadModel(Tiny(), a);  // same configuration: shares the env arena
  try {
    ebb::LoadModel(Tiny(), b);
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("process-wide"));
    EXPECT_THAT(e.what(), HasSubstr("max_mem=268435456"));
  }
  first.reset();
  same.reset();
  EXPECT_NO_THROW(ebb::LoadModel(Tiny(), b)) << "after the others unload, a new config registers";
  ModelOptions typo;
  EXPECT_THROW(
      {
        typo.Set("session_options.arena.max_mme", "1MiB");
        ebb::LoadModel(Tiny(), typo);
      },
      Error);
}

}  // namespace
}  // namespace ebb

#include "ebb/runtime.h"

namespace ebb {
namespace {

TEST(Budgets, RuntimeWideMemoryLimitCoversAllModels) {
  auto a = ebb::LoadModel(Tiny());
  auto b = ebb::LoadModel(Tiny());  // a second model: the budget is over both
  const uint64_t per_gen_a = a->info().kv_bytes_per_token * 256;
  // One generator, not two, beside the weights of every model the default runtime holds.
  Runtime::Default().SetMemoryLimit(Runtime::Default().Stats().weights_bytes + per_gen_a +
                                    per_gen_a / 2);
  {
    Generator running(a, GeneratorParams{.max_length = 256});
    running.AppendTokens(std::vector<int32_t>{5, 17, 42});
    EXPECT_GE(Runtime::Default().Stats().kv.in_use_bytes, per_gen_a);
    try {
      Generator refused(b, GeneratorParams{.max_length = 256});
      FAIL() << "expected ResourceExhausted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("memory.limit"));
      EXPECT_THAT(e.what(), HasSubstr("bytes in use by all models"));
    }
    while (!running.done()) running.GenerateNextToken();  // unaffected
    EXPECT_EQ(running.sequence(0).size(), 256u);
  }
  EXPECT_EQ(Runtime::Default().Stats().kv.in_use_bytes, 0u);
  EXPECT_NO_THROW(Generator(b, GeneratorParams{.max_length = 256}))
      << "admitted once the first request finished";
  Runtime::Default().SetMemoryLimit(0);
  EXPECT_EQ(Runtime::Default().num_models(), 2);
}

TEST(Budgets, MemoryLimitAsALoadOption) {
  ModelOptions o;
  o.Set("memory.limit", "1KiB");
  // The weights alone are over 1 KiB: the load is refused and the runtime's limit is unchanged.
  try {
    ebb::LoadModel(Tiny(), o);
    FAIL() << "expected ResourceExhausted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("of weights"));
  }
  EXPECT_EQ(Runtime::Default().memory_limit(), 0u);
  const uint64_t weights = ebb::LoadModel(Tiny())->weights_bytes();  // loaded and freed
  o.Set("memory.limit", std::to_string(Runtime::Default().Stats().weights_bytes + weights + 1024));
  auto m = ebb::LoadModel(Tiny(), o);
  EXPECT_EQ(Runtime::Default().memory_limit(), Runtime::Default().Stats().weights_bytes + 1024);
  EXPECT_THROW(Generator(m, GeneratorParams{.max_length = 64}), Error);
  Runtime::Default().SetMemoryLimit(0);
  EXPECT_EQ(Generate(m, {1, 2, 3}, 8).size(), 8u);
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

TEST(Unload, FiftyLoadUnloadCyclesOfASmallModelKeepRssFlat) {
  const auto dir = testing::TestModelsDir() / "llama-small-int4";
  int64_t after_first = 0;
  for (int i = 0; i < 50; ++i) {
    {
      auto m = ebb::LoadModel(dir);
      Generate(m, {5, 17, 42, 99}, 12);
    }
    const int64_t rss = ReadProcessMemory().rss_bytes;
    if (i == 0) after_first = rss;
    EXPECT_LE(rss - after_first, 16 * kMiB) << "cycle " << i;
  }
}

// Requests with prompt lengths 16..2047 and ShrinkEvery(20); RSS after each request. The lengths
// cycle through one shuffled set of 100, so both halves of the run see the same prompts.
std::vector<int64_t> MixedRequests(int n) {
  ModelOptions o;
  if (const char* mp = std::getenv("EBB_TEST_MEM_PATTERN")) {
    o.Set("session_options.enable_mem_pattern", mp);
  }
  auto m = ebb::LoadModel(Wide(), o);
  m->runtime().ShrinkEvery(20);
  std::vector<int> lengths(100);
  for (int i = 0; i < 100; ++i) lengths[i] = 16 + i * (2047 - 16) / 99;
  uint64_t x = 12345;
  for (int i = 99; i > 0; --i) {  // deterministic Fisher-Yates
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(lengths[i], lengths[static_cast<int>((x >> 33) % (i + 1))]);
  }
  std::vector<int64_t> rss;
  for (int i = 0; i < n; ++i) {
    const int len = lengths[i % 100];
    Generate(m, Prompt(len, 1024), len + 4);
    rss.push_back(ReadProcessMemory().rss_bytes);
  }
  return rss;
}

double SlopeBytesPerRequest(const std::vector<int64_t>& y, size_t from) {
  const double n = static_cast<double>(y.size() - from);
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = from; i < y.size(); ++i) {
    const double xi = static_cast<double>(i), yi = static_cast<double>(y[i]);
    sx += xi;
    sy += yi;
    sxx += xi * xi;
    sxy += xi * yi;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

// `check_peaks`: whether the last half's maximum RSS must be within 2 % of the first half's (the
// issue's criterion for 1,000 requests). Over 200 requests the peaks depend on heap warm-up and
// varied by up to 7 % between runs of the same build, so the default suite relies on the
// post-shrink trend, which is what a leak moves.
void CheckFlat(const std::vector<int64_t>& rss, bool check_peaks) {
  const size_t half = rss.size() / 2;
  const int64_t first = *std::max_element(rss.begin(), rss.begin() + half);
  const int64_t last = *std::max_element(rss.begin() + half, rss.end());
  std::printf("max RSS: first half %lld KiB, last half %lld KiB\n",
              static_cast<long long>(first / 1024), static_cast<long long>(last / 1024));
  if (check_peaks) {
    EXPECT_LE(static_cast<double>(last), 1.02 * static_cast<double>(first))
        << "max RSS of the last half " << last << " vs first half " << first;
  }
  const double slope = SlopeBytesPerRequest(rss, 20);
  // Between shrinks RSS follows the prompts (a sawtooth), so the trend is read where the
  // policy has just shrunk: after every 20th request.
  std::vector<int64_t> after_shrink;
  for (size_t i = 19; i < rss.size(); i += 20) after_shrink.push_back(rss[i]);
  const double shrink_slope = SlopeBytesPerRequest(after_shrink, 1) / 20.0;
  std::printf(
      "RSS slope over %zu requests: %.0f bytes/request (all), %.0f bytes/request "
      "(after each shrink)\n",
      rss.size(), slope, shrink_slope);
  for (int64_t v : after_shrink) std::printf("  %lld", static_cast<long long>(v / 1024));
  std::printf(" KiB\n");
  EXPECT_LT(std::abs(shrink_slope), 8 * 1024.0) << "bytes per request";
}

TEST(Soak, TwoHundredMixedRequestsWithShrinkEveryTwentyStayFlat) {
  const char* n = std::getenv("EBB_SOAK_REQUESTS");
  const int requests = n != nullptr ? std::atoi(n) : 200;
  CheckFlat(MixedRequests(requests), /*check_peaks=*/requests >= 1000);
}

}  // namespace
}  // namespace ebb
