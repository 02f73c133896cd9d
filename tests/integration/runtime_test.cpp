// ebb::Runtime: named models, List(), Unload (refused while busy, forced waits then frees),
// observers, the runtime budget over several models, runtime options.
#include "ebb/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/process_memory.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kMiB = 1 << 20;

std::filesystem::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }
std::filesystem::path Gpt2() { return testing::TestModelsDir() / "gpt2-tiny-fp32"; }
std::filesystem::path Small() { return testing::TestModelsDir() / "llama-small-int4"; }

void RunToEnd(const std::shared_ptr<Model>& m, int max_length) {
  Generator g(m, GeneratorParams{.max_length = max_length});
  g.AppendTokens(std::vector<int32_t>{5, 17, 42});
  while (!g.done()) g.GenerateNextToken();
}

TEST(Runtime, TwoModelsUnderDifferentIdsAreListedWithTheirFigures) {
  Runtime rt;
  auto a = rt.Load("a", Tiny());
  auto b = rt.Load("b", Gpt2());
  EXPECT_EQ(a->id(), "a");
  EXPECT_EQ(rt.Get("b"), b);
  EXPECT_EQ(rt.num_models(), 2);
  RunToEnd(a, 16);
  Generator live(b, GeneratorParams{.max_length = 32});
  live.AppendTokens(std::vector<int32_t>{5, 17, 42});

  const auto list = rt.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, "a");
  EXPECT_EQ(list[1].id, "b");
  for (const auto& s : list) {
    EXPECT_GT(s.weights_bytes, 1000u) << s.id;
    EXPECT_TRUE(s.cpu_arena.available) << s.id;
    EXPECT_GT(s.cpu_arena.total_allocated_bytes, 0) << s.id;
  }
  EXPECT_EQ(list[0].live_generators, 0);
  EXPECT_EQ(list[0].requests_served, 1u);
  EXPECT_GT(list[0].last_used_unix_ms, 0);
  EXPECT_EQ(list[0].kv.in_use_bytes, 0u);
  EXPECT_EQ(list[1].live_generators, 1);
  EXPECT_EQ(list[1].requests_served, 0u);
  EXPECT_EQ(list[1].kv.in_use_bytes, b->kv_stats().in_use_bytes);
  EXPECT_GT(list[1].kv.in_use_bytes, 0u);
  EXPECT_EQ(rt.Stats().kv.in_use_bytes, list[1].kv.in_use_bytes) << "runtime KV = sum of models";
  // The one JSON form of List() (C ABI, Python): the same figures under the same names.
  const auto j = nlohmann::json::parse(ToJson(list));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["id"], "b");
  EXPECT_EQ(j[1]["kv"]["in_use_bytes"], list[1].kv.in_use_bytes);
  EXPECT_EQ(j[1]["live_generators"], 1);
  EXPECT_EQ(j[0]["cpu_arena"]["total_allocated_bytes"], list[0].cpu_arena.total_allocated_bytes);
  EXPECT_EQ(j[0]["is_encoder"], false);
}

TEST(Runtime, IdsAreCheckedAndUnique) {
  Runtime rt;
  rt.Load("m", Tiny());
  try {
    rt.Load("m", Gpt2());
    FAIL() << "expected FailedPrecondition";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("already loaded as 'm'"));
  }
  EXPECT_EQ(rt.Get("m")->info().type, "llama") << "the registry is unchanged";
  EXPECT_THROW(rt.Load("../etc", Tiny()), Error);
  EXPECT_THROW(rt.Load("", Tiny()), Error);
  try {
    rt.Get("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("loaded: m"));
  }
  EXPECT_THROW(rt.Unload("nope"), Error);
  // A failed load leaves the registry as it was.
  EXPECT_THROW(rt.Load("bad", testing::TestModelsDir() / "no-such-model"), Error);
  EXPECT_FALSE(rt.Contains("bad"));
  EXPECT_EQ(rt.List().size(), 1u);
}

TEST(Runtime, UnloadWithALiveGeneratorIsRefusedNamingTheCount) {
  Runtime rt;
  auto m = rt.Load("m", Tiny());
  {
    Generator g1(m, GeneratorParams{.max_length = 16});
    Generator g2(m, GeneratorParams{.max_length = 16});
    try {
      rt.Unload("m");
      FAIL() << "expected FailedPrecondition";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
      EXPECT_THAT(e.what(), HasSubstr("2 live generators"));
      EXPECT_THAT(e.what(), HasSubstr("force"));
    }
    EXPECT_TRUE(rt.Contains("m"));
    g1.AppendTokens(std::vector<int32_t>{1, 2, 3});  // still usable
  }
  rt.Unload("m");
  EXPECT_FALSE(rt.Contains("m"));
  try {
    Generator g(m, GeneratorParams{.max_length = 16});  // the caller still holds the model
    FAIL() << "expected FailedPrecondition";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("unloaded"));
  }
}

TEST(Runtime, ForcedUnloadWaitsForTheRunningGeneratorThenFrees) {
  Runtime rt;
  {  // warm-up: ORT's first session and thread pools are process-lifetime costs
    auto w = rt.Load("warm", Small());
    RunToEnd(w, 8);
    w.reset();
    rt.Unload("warm");
  }
  const int64_t before = ReadProcessMemory().rss_bytes;
  auto m = rt.Load("m", Small());
  RunToEnd(m, 16);

  std::promise<void> started;
  std::atomic<bool> finish{false};
  std::string user_error;
  size_t user_length = 0;
  std::thread user([&] {
    try {
      Generator g(m, GeneratorParams{.max_length = 64});
      g.AppendTokens(std::vector<int32_t>{5, 17, 42});
      started.set_value();
      while (!finish) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      // The open generation goes on while the unload waits for it (not detached, not freed).
      while (!g.done()) g.GenerateNextToken();
      user_length = g.sequence(0).size();
    } catch (const std::exception& e) {
      user_error = e.what();
    }
  });
  started.get_future().wait();
  const int64_t loaded = ReadProcessMemory().rss_bytes;
  auto unload = std::async(std::launch::async, [&] { rt.Unload("m", /*force=*/true); });
  EXPECT_EQ(unload.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "a forced unload waits for the running generator";
  EXPECT_FALSE(rt.Contains("m")) << "no new request can find the model meanwhile";
  finish = true;
  unload.get();
  user.join();
  EXPECT_EQ(user_error, "") << "the generation running on another thread was cut off";
  EXPECT_EQ(user_length, 64u);
  m.reset();
  const int64_t after = ReadProcessMemory().rss_bytes;
  std::printf("RSS before load %lld KiB, loaded %lld KiB, after forced unload %lld KiB\n",
              static_cast<long long>(before / 1024), static_cast<long long>(loaded / 1024),
              static_cast<long long>(after / 1024));
  EXPECT_GT(loaded - before, 16 * kMiB) << "the model must be big enough to see it go";
  EXPECT_LE(after - before, 16 * kMiB);
}

// Issue 24 item 1-2: a destructor or a forced unload on the thread that holds a generator never
// waits for it (it could not progress): the generator is detached, fails its next call, and the
// model's memory goes when it is destroyed. Each call runs under a deadline so a regression
// fails the test instead of hanging the suite.
template <typename F>
bool ReturnsWithin(std::chrono::seconds limit, F&& fn) {
  auto done = std::make_shared<std::promise<void>>();
  auto f = done->get_future();
  std::thread t([done, fn = std::forward<F>(fn)]() mutable {
    fn();
    done->set_value();
  });
  if (f.wait_for(limit) != std::future_status::ready) {
    t.detach();  // hung: report, and let ctest's timeout end the process
    return false;
  }
  t.join();
  return true;
}

void ExpectDetached(Generator& g) {
  try {
    g.GenerateNextToken();
    FAIL() << "a detached generator ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("unloaded while this generator was idle"));
  }
}

TEST(Runtime, DestroyingTheRuntimeWithIdleGeneratorsDetachesThemInsteadOfWaiting) {
  auto rt = std::make_unique<Runtime>();
  auto m = rt->Load("m", Tiny());
  auto fresh = std::make_unique<Generator>(m, GeneratorParams{.max_length = 16});
  auto mid = std::make_unique<Generator>(m, GeneratorParams{.max_length = 16});
  mid->AppendTokens(std::vector<int32_t>{5, 17, 42});
  mid->GenerateNextToken();
  const size_t len = mid->sequence(0).size();
  // Both generators belong to this thread; the old destructor waited for them forever.
  ASSERT_TRUE(ReturnsWithin(std::chrono::seconds(30), [&] { rt.reset(); }));
  ExpectDetached(*mid);
  EXPECT_EQ(mid->sequence(0).size(), len) << "its state stays readable";
  try {
    fresh->AppendTokens(std::vector<int32_t>{1});
    FAIL() << "a detached generator ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
  }
  EXPECT_THROW(Generator(m, GeneratorParams{}), Error) << "no new generator on it";
  EXPECT_EQ(m->num_live_generators(), 2);
  fresh.reset();
  mid.reset();  // the last one frees the session
  EXPECT_EQ(m->num_live_generators(), 0);
}

TEST(Runtime, ForcedUnloadOnTheThreadThatHoldsAGenerationDetachesIt) {
  Runtime rt;
  auto m = rt.Load("m", Tiny());
  // All on one thread (the helper's): the generation is open on the thread that unloads.
  ASSERT_TRUE(ReturnsWithin(std::chrono::seconds(30), [&] {
    Generator g(m, GeneratorParams{.max_length = 16});
    g.AppendTokens(std::vector<int32_t>{5, 17, 42});
    g.GenerateNextToken();
    rt.Unload("m", /*force=*/true);
    ExpectDetached(g);
  }));
  EXPECT_FALSE(rt.Contains("m"));
  // The id can be loaded again at once, and serves.
  auto again = rt.Load("m", Tiny());
  RunToEnd(again, 8);
}

class Recorder : public RequestObserver {
 public:
  void OnRequestStart(const RequestStart& s) override {
    std::lock_guard<std::mutex> lock(mu);
    starts.push_back(s);
  }
  void OnRequestEnd(const RequestEnd& e) override {
    std::lock_guard<std::mutex> lock(mu);
    ends.push_back(e);
  }
  std::mutex mu;
  std::vector<RequestStart> starts;
  std::vector<RequestEnd> ends;
};

TEST(Runtime, ObserversSeeEveryRequestWithTokensTimesAndOutcome) {
  Runtime rt;
  auto rec = std::make_shared<Recorder>();
  rt.AddObserver(rec);
  auto m = rt.Load("m", Tiny());
  RunToEnd(m, 12);  // completed
  {
    Generator g(m, GeneratorParams{.max_length = 12});
    g.AppendTokens(std::vector<int32_t>{5, 17});
    g.GenerateNextToken();
  }                            // destroyed before the end: cancelled
  m->runtime().ShrinkArena();  // ebb's own minimal step is not a request
  ASSERT_EQ(rec->starts.size(), 2u);
  ASSERT_EQ(rec->ends.size(), 2u);
  EXPECT_EQ(rec->starts[0].model_id, "m");
  EXPECT_EQ(rec->ends[0].request_id, rec->starts[0].request_id);
  EXPECT_EQ(rec->ends[0].outcome, RequestOutcome::kCompleted);
  EXPECT_EQ(rec->ends[0].prompt_tokens, 3u);
  EXPECT_EQ(rec->ends[0].generated_tokens, 9u);
  EXPECT_GT(rec->ends[0].ttft_ms, 0);
  EXPECT_GE(rec->ends[0].duration_ms, rec->ends[0].ttft_ms);
  EXPECT_EQ(rec->ends[1].outcome, RequestOutcome::kCancelled);
  EXPECT_EQ(rec->ends[1].generated_tokens, 1u);
  EXPECT_EQ(RequestOutcomeName(rec->ends[1].outcome), "cancelled");

  // A refused step ends the request as an error.
  ModelOptions small_kv;
  small_kv.Set("kv_cache.mode", "dynamic");
  small_kv.Set("kv_cache.chunk_tokens", "8");
  // Room for the first 8-token chunk (page-rounded), not for the growth that follows it.
  const uint64_t first = (m->info().kv_bytes_per_token * 8 + 4095) / 4096 * 4096;
  small_kv.Set("kv_cache.max_bytes", std::to_string(first + first / 2));
  auto capped = rt.Load("capped", Tiny(), small_kv);
  {
    Generator g(capped, GeneratorParams{.max_length = 64});
    g.AppendTokens(std::vector<int32_t>{5, 17, 42});
    EXPECT_THROW(
        {
          while (!g.done()) g.GenerateNextToken();
        },
        Error);
  }
  ASSERT_EQ(rec->ends.size(), 3u);
  EXPECT_EQ(rec->ends[2].model_id, "capped");
  EXPECT_EQ(rec->ends[2].outcome, RequestOutcome::kError);

  rt.RemoveObserver(rec.get());
  RunToEnd(m, 8);
  EXPECT_EQ(rec->ends.size(), 3u);
}

TEST(Runtime, OwnBudgetOverItsModelsAndRuntimeOptions) {
  RuntimeOptions ro;
  ro.Set("memory.limit", "1GiB");
  try {
    ro.Set("memory.limt", "1MiB");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'memory.limit'"));
  }
  try {
    ro.Set("kv_cache.mode", "dynamic");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a model or request option, not a runtime option"));
  }
  Runtime rt(ro);
  EXPECT_EQ(rt.memory_limit(), 1u << 30);
  auto a = rt.Load("a", Tiny());
  auto b = rt.Load("b", Gpt2());
  // memory.limit covers the weights of both models and the KV of their requests.
  EXPECT_EQ(rt.Stats().weights_bytes, a->weights_bytes() + b->weights_bytes());
  const uint64_t need_a = a->info().kv_bytes_per_token * 512;
  rt.SetMemoryLimit(rt.Stats().weights_bytes + need_a + need_a / 2);
  Generator ga(a, GeneratorParams{.max_length = 512});
  try {
    Generator gb(b, GeneratorParams{.max_length = 512});
    FAIL() << "expected ResourceExhausted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("memory.limit"));
  }
  // Another runtime has its own budget.
  Runtime other;
  auto c = other.Load("c", Gpt2());
  EXPECT_NO_THROW(Generator(c, GeneratorParams{.max_length = 512}));
}

TEST(Runtime, ArenaOptionsOnTheRuntimeAreSharedByUseEnvAllocators) {
  RuntimeOptions ro;
  ro.Set("arena_extend_strategy", "kSameAsRequested");
  ro.Set("arena.max_mem", "256MiB");
  Runtime rt(ro);
  ModelOptions mo;
  mo.Set("session_options.use_env_allocators", "1");
  auto m = rt.Load("m", Tiny(), mo);
  RunToEnd(m, 16);
  const auto a = m->runtime().Stats().cpu_arena;
  ASSERT_TRUE(a.available);
  EXPECT_EQ(a.limit_bytes, 256 * kMiB) << "the model allocates from the runtime's arena";
  // A model asking for a different arena while this one is registered is refused.
  ModelOptions other;
  other.Set("session_options.arena.max_mem", "128MiB");
  EXPECT_THROW(rt.Load("x", Tiny(), other), Error);
}

TEST(Runtime, UseEnvAllocatorsAloneSetsUpAnEnvArenaWithOrtDefaults) {
  Runtime rt;
  ModelOptions mo;
  mo.Set("session_options.use_env_allocators", "1");
  auto m = rt.Load("m", Tiny(), mo);
  RunToEnd(m, 16);
  EXPECT_TRUE(m->runtime().Stats().cpu_arena.available);
  EXPECT_GT(m->runtime().Stats().cpu_arena.total_allocated_bytes, 0);
}

}  // namespace
}  // namespace ebb
