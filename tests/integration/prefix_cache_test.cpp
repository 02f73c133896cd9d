// Issue 25: the prefix cache. A request that starts with a stored prefix prefills only the rest,
// with exactly the tokens it gets without the cache (greedy; shared, ping-pong and combined KV
// layouts; static and dynamic modes; batched decode rows); the cache stays inside
// prefix_cache.max_bytes, gives its memory back before a request is refused and on shrinks, and
// keeps what is pinned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/runtime.h"
#include "generate/generator_testing.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Tokens = std::vector<int32_t>;

Tokens Range(int len, int seed, int vocab = 1000) {
  Tokens t;
  for (int i = 0; i < len; ++i) t.push_back(5 + (seed * 131 + i * 37 + i * i * 7) % (vocab - 10));
  return t;
}
Tokens Cat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Outcome {
  Tokens sequence;
  uint64_t cached = 0;
  std::vector<float> first_logits, last_logits;  // after the prefill, and of the last step
};

// Random-weight test models pick nearly the same tokens whatever the context, so tokens alone
// hardly test that the reused KV is right: the logits after the prefill and at the last step
// must also agree with a run without the cache.
float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}
constexpr float kLogitTolerance = 1e-4f;

void ExpectSame(const Outcome& with, const Outcome& without, const std::string& what) {
  EXPECT_EQ(with.sequence, without.sequence) << what;
  EXPECT_LT(MaxDiff(with.first_logits, without.first_logits), kLogitTolerance) << what;
  EXPECT_LT(MaxDiff(with.last_logits, without.last_logits), kLogitTolerance) << what;
}

Outcome Greedy(const std::shared_ptr<Model>& model, const Tokens& prompt, int new_tokens,
               const char* mode = nullptr, bool cache_prompt = true) {
  GeneratorParams p;
  p.max_length = static_cast<int32_t>(prompt.size()) + new_tokens;
  if (mode != nullptr) p.Set("kv_cache.mode", mode);
  p.cache_prompt = cache_prompt;
  Generator g(model, p);
  g.AppendTokens(prompt);
  Outcome out;
  g.GenerateNextToken();
  out.first_logits.assign(g.GetLogits().begin(), g.GetLogits().end());
  while (!g.done()) {
    g.GenerateNextToken();
    out.last_logits.assign(g.GetLogits().begin(), g.GetLogits().end());
  }
  if (out.last_logits.empty()) out.last_logits = out.first_logits;
  auto s = g.sequence(0);
  out.sequence.assign(s.begin(), s.end());
  out.cached = g.Stats().cached_tokens;
  return out;
}

std::shared_ptr<Model> Load(const fs::path& dir, const char* cache_bytes,
                            std::map<std::string, std::string> more = {}) {
  ModelOptions mo;
  mo.Set("prefix_cache.max_bytes", cache_bytes);
  mo.Set("model_cache.dir", "off");
  for (const auto& [k, v] : more) mo.Set(k, v);
  return ebb::LoadModel(dir, mo);
}

// A copy of a test model with search.past_present_share_buffer off: GQA in the ping-pong layout.
class PingPongCopy {
 public:
  explicit PingPongCopy(const fs::path& src) {
    dir_ = fs::temp_directory_path() / ("ebb_prefix_pp_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::copy(src, dir_, fs::copy_options::recursive);
    auto cfg = nlohmann::json::parse(std::ifstream(dir_ / "genai_config.json"));
    cfg["search"]["past_present_share_buffer"] = false;
    std::ofstream(dir_ / "genai_config.json") << cfg.dump(2);
  }
  ~PingPongCopy() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

struct Layout {
  const char* model;
  bool pingpong_copy;  // GQA with past_present_share_buffer off
  const char* layout;  // what the load must resolve (checked)
};

class PrefixLayouts : public ::testing::TestWithParam<std::tuple<Layout, const char*>> {};

// A shared system prompt with varied questions, then a chat that grows by one exchange per turn:
// the same greedy tokens as a model without the cache, and the cache was used.
TEST_P(PrefixLayouts, SameGreedyTokensAsWithoutTheCache) {
  const auto& [layout, mode] = GetParam();
  const fs::path src = testing::TestModelsDir() / layout.model;
  std::unique_ptr<PingPongCopy> copy;
  if (layout.pingpong_copy) copy = std::make_unique<PingPongCopy>(src);
  const fs::path dir = copy ? copy->dir() : src;
  auto cached = Load(dir, "64MiB");
  auto plain = Load(dir, "0");
  const std::string shape = cached->info().past_present_share_buffer ? "shared"
                            : cached->info().uses_gqa                ? "gqa-pingpong"
                                                                     : "pingpong";
  ASSERT_EQ(shape, layout.layout);
  const int vocab = cached->info().vocab_size;

  const Tokens system = Range(40, 1, vocab);
  uint64_t reused = 0;
  for (int q = 0; q < 4; ++q) {
    const Tokens prompt = Cat(system, Range(5 + 7 * q, 10 + q, vocab));
    const Outcome with = Greedy(cached, prompt, 12, mode);
    const Outcome without = Greedy(plain, prompt, 12, mode);
    ExpectSame(with, without, "question " + std::to_string(q));
    if (q > 0) {
      EXPECT_EQ(with.cached, 32u) << "question " << q << ": two whole blocks of 16";
    }
    reused += with.cached;
    EXPECT_EQ(without.cached, 0u);
  }
  // A chat: each turn is the last turn's whole sequence plus a new user message.
  Tokens history = Range(21, 3, vocab);
  for (int turn = 0; turn < 4; ++turn) {
    const Tokens prompt = Cat(history, Range(6, 20 + turn, vocab));
    const Outcome with = Greedy(cached, prompt, 10, mode);
    const Outcome without = Greedy(plain, prompt, 10, mode);
    ExpectSame(with, without, "turn " + std::to_string(turn));
    ASSERT_EQ(with.sequence, without.sequence);
    if (turn > 0) {
      // The last turn stored its prompt and answer: all of it but the last partial block.
      EXPECT_GE(with.cached, history.size() - 16) << "turn " << turn;
    }
    reused += with.cached;
    history = with.sequence;
  }
  const PrefixCacheStats st = cached->runtime().Stats().prefix_cache;
  EXPECT_EQ(st.tokens_reused, reused);
  EXPECT_EQ(st.hits, 6u);    // questions 1-3, turns 1-3
  EXPECT_EQ(st.misses, 2u);  // question 0, turn 0
  EXPECT_GT(st.bytes, 0u);
  EXPECT_LE(st.bytes, st.max_bytes);
  EXPECT_EQ(
      plain->runtime().Stats().prefix_cache.hits + plain->runtime().Stats().prefix_cache.misses,
      0u);
}

INSTANTIATE_TEST_SUITE_P(
    Models, PrefixLayouts,
    ::testing::Combine(::testing::Values(Layout{"llama-tiny-fp32", false, "shared"},
                                         Layout{"llama-tiny-fp32", true, "gqa-pingpong"},
                                         Layout{"qwen2-tiny-fp32", false, "shared"},
                                         Layout{"gpt2-tiny-fp32", false, "pingpong"},
                                         Layout{"phi3-tiny-fp32-unfused", false, "shared"},
                                         Layout{"llama-tiny-int4-b32", false, "shared"}),
                       ::testing::Values("static", "dynamic")),
    [](const auto& param_info) {
      std::string name = std::get<0>(param_info.param).model;
      if (std::get<0>(param_info.param).pingpong_copy) name += "_pingpong";
      name += std::string("_") + std::get<1>(param_info.param);
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// The real stories260k (a trained Llama with its real tokenizer), through the Generate loop with
// text prompts: a growing chat gives the same text with and without the cache.
TEST(PrefixCache, Stories260kChatTurnsGiveTheSameText) {
  const fs::path dir = testing::SharedDir() / "models" / "stories260k";
  if (!fs::exists(dir / "genai_config.json")) {
    GTEST_SKIP() << "stories260k fixture not found at " << dir << " (needs ../shared)";
  }
  auto cached = Load(dir, "16MiB");
  auto plain = Load(dir, "0");
  std::string story = "Once upon a time, there was a little girl named Lily. She loved to play";
  for (int turn = 0; turn < 3; ++turn) {
    GenerateRequest req;
    req.prompt = story;
    req.Set("max_new_tokens", "24");
    const GenerateResult with = Generate(cached, req);
    const GenerateResult without = Generate(plain, req);
    ASSERT_EQ(with.rows[0].text, without.rows[0].text) << "turn " << turn;
    if (turn > 0) {
      EXPECT_GT(with.usage.cached_tokens, 0u) << "turn " << turn;
    }
    EXPECT_EQ(without.usage.cached_tokens, 0u);
    story += with.rows[0].text + " Then";
  }
}

// A batch of two rows: the same tokens as without the cache; the rows' prompts are stored, so
// a later one-row request that starts with one of them reuses it.
TEST(PrefixCache, BatchOfTwoRowsGivesTheSameTokensAndStoresItsRows) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  auto cached = Load(dir, "64MiB");
  auto plain = Load(dir, "0");
  const std::vector<Tokens> rows{Range(37, 5), Range(50, 6)};
  auto run = [&](const std::shared_ptr<Model>& m) {
    GeneratorParams p;
    p.batch_size = 2;
    p.max_length = 70;
    Generator g(m, p);
    g.AppendTokens(rows);
    while (!g.done()) g.GenerateNextToken();
    return std::vector<Tokens>{Tokens(g.sequence(0).begin(), g.sequence(0).end()),
                               Tokens(g.sequence(1).begin(), g.sequence(1).end())};
  };
  EXPECT_EQ(run(cached), run(plain));
  EXPECT_EQ(cached->runtime().Stats().prefix_cache.tokens_stored, 32u + 48u);
  const Outcome again = Greedy(cached, Cat(rows[1], Range(4, 9)), 6);
  EXPECT_EQ(again.cached, 48u);
  ExpectSame(again, Greedy(plain, Cat(rows[1], Range(4, 9)), 6), "after the batch");
}

// Batched decode rows (decode_batch.max_rows): concurrent requests that share a prefix decode in
// one Run() per step from KV copied into their rows, with their solo tokens.
TEST(PrefixCache, ConcurrentRequestsInBatchedDecodeRowsGetTheirSoloTokens) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-int4-b32";
  auto cached = Load(dir, "64MiB", {{"decode_batch.max_rows", "4"}});
  auto plain = Load(dir, "0");
  const Tokens system = Range(48, 2);
  Greedy(cached, Cat(system, Range(3, 1)), 2);  // stores the system prompt
  std::vector<Outcome> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(
        [&, t] { got[t] = Greedy(cached, Cat(system, Range(4 + t, 40 + t)), 16); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    ExpectSame(got[t], Greedy(plain, Cat(system, Range(4 + t, 40 + t)), 16),
               "thread " + std::to_string(t));
    EXPECT_EQ(got[t].cached, 48u) << "thread " << t;
  }
}

// Many threads over a small budget: blocks are evicted while others copy from them; every
// request still gets its solo tokens, and the budget holds.
TEST(PrefixCache, ConcurrentRequestsWithEvictionsKeepTheirTokensAndTheBudget) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  const uint64_t block = 16 * Load(dir, "0")->info().kv_bytes_per_token;
  const uint64_t budget = std::max<uint64_t>(8 * 4096, 8 * block);
  auto cached = Load(dir, std::to_string(budget).c_str());
  auto plain = Load(dir, "0");
  std::vector<Tokens> prefixes;
  for (int i = 0; i < 3; ++i) prefixes.push_back(Range(33 + 16 * i, 70 + i));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const Tokens prompt = Cat(prefixes[(t + i) % 3], Range(3 + i % 5, t * 100 + i));
        const Outcome with = Greedy(cached, prompt, 4), without = Greedy(plain, prompt, 4);
        if (with.sequence != without.sequence ||
            MaxDiff(with.last_logits, without.last_logits) >= kLogitTolerance) {
          ++mismatches;
        }
        EXPECT_LE(cached->runtime().Stats().prefix_cache.bytes, budget);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  const PrefixCacheStats st = cached->runtime().Stats().prefix_cache;
  EXPECT_GT(st.hits, 0u);
  EXPECT_GT(st.evicted_blocks, 0u) << "the budget was never reached: the test proves nothing";
  EXPECT_LE(st.bytes, budget);
}

// 1,000 requests with random prefixes never take the cache over prefix_cache.max_bytes, and the
// KV in use at the end is only the cache's.
TEST(PrefixCache, ThousandRandomRequestsNeverExceedTheBudget) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  auto model = Load(dir, "256KiB");
  std::mt19937 rng(7);
  uint64_t peak = 0;
  for (int i = 0; i < 1000; ++i) {
    // A few shared roots so that some requests hit, random tails so that the cache churns.
    Tokens prompt = Range(16 * (1 + static_cast<int>(rng() % 3)), static_cast<int>(rng() % 4));
    prompt = Cat(prompt, Range(1 + static_cast<int>(rng() % 40), static_cast<int>(rng() % 100000)));
    Greedy(model, prompt, 1);
    const PrefixCacheStats st = model->runtime().Stats().prefix_cache;
    ASSERT_LE(st.bytes, st.max_bytes) << "request " << i;
    peak = std::max(peak, st.bytes);
  }
  const MemoryStats ms = model->runtime().Stats();
  EXPECT_GT(ms.prefix_cache.hits, 100u);
  EXPECT_GT(ms.prefix_cache.evicted_blocks, 0u);
  EXPECT_GT(peak, ms.prefix_cache.max_bytes / 2);
  EXPECT_EQ(ms.kv.in_use_bytes, ms.prefix_cache.bytes);
}

// cache_prompt=false: nothing is looked up or stored.
TEST(PrefixCache, CachePromptFalseNeitherReusesNorStores) {
  auto model = Load(testing::TestModelsDir() / "llama-tiny-fp32", "64MiB");
  const Tokens prompt = Range(50, 1);
  Greedy(model, prompt, 4);
  const uint64_t stored = model->runtime().Stats().prefix_cache.tokens_stored;
  const Outcome off = Greedy(model, Cat(prompt, Range(40, 2)), 4, nullptr, /*cache_prompt=*/false);
  EXPECT_EQ(off.cached, 0u);
  const PrefixCacheStats st = model->runtime().Stats().prefix_cache;
  EXPECT_EQ(st.tokens_stored, stored);
  EXPECT_EQ(st.hits, 0u);

  GeneratorParams p;
  EXPECT_TRUE(p.cache_prompt);
  p.Set("cache_prompt", "false");
  EXPECT_FALSE(p.cache_prompt);
  GenerateRequest req;
  req.Set("cache_prompt", "0");
  EXPECT_FALSE(req.params.cache_prompt);
}

// A step that fails after the prefix was copied in leaves the cache and the generator
// consistent: the next request gets the right tokens.
TEST(PrefixCache, AFailedRequestLeavesTheCacheConsistent) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  auto model = Load(dir, "64MiB", {{"prefill_chunk_size", "8"}});
  auto plain = Load(dir, "0", {{"prefill_chunk_size", "8"}});
  const Tokens system = Range(48, 4);
  Greedy(model, Cat(system, Range(3, 1)), 2);
  const Tokens prompt = Cat(system, Range(30, 2));
  for (int nth = 1; nth <= 3; ++nth) {
    internal::FailNthRunForTesting(nth);
    GeneratorParams p;
    p.max_length = static_cast<int32_t>(prompt.size()) + 8;
    Generator g(model, p);
    EXPECT_THROW(
        {
          g.AppendTokens(prompt);
          while (!g.done()) g.GenerateNextToken();
        },
        Error)
        << "failure at run " << nth;
    internal::FailNthRunForTesting(0);
  }
  const Outcome after = Greedy(model, prompt, 8);
  EXPECT_EQ(after.cached, 48u);
  ExpectSame(after, Greedy(plain, prompt, 8), "after the failures");
}

// kv_cache.max_bytes: a request that only fits when the cache gives memory back succeeds, and
// the cache shrank (reclaimed, not refused).
TEST(PrefixCache, ARequestThatFitsOnlyWithoutTheCacheTakesItsMemory) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  const uint64_t per_token = Load(dir, "0")->info().kv_bytes_per_token;
  // Room for one 256-token generator; the cache alone may take as much.
  const uint64_t kv_budget = 256 * per_token + 64 * 1024;
  auto model = Load(dir, std::to_string(kv_budget).c_str(),
                    {{"kv_cache.max_bytes", std::to_string(kv_budget)}});
  for (int i = 0; i < 8; ++i) Greedy(model, Range(100, 50 + i), 2, "dynamic");
  const PrefixCacheStats before = model->runtime().Stats().prefix_cache;
  ASSERT_GT(before.bytes, kv_budget / 2) << "the cache must hold enough to be in the way";
  GeneratorParams p;
  p.max_length = 256;
  p.kv_mode = KvMode::kStatic;  // reserves 256 tokens now
  Generator g(model, p);
  g.AppendTokens(Range(20, 99));
  g.GenerateNextToken();
  const PrefixCacheStats after = model->runtime().Stats().prefix_cache;
  EXPECT_LT(after.bytes, before.bytes);
  EXPECT_GT(after.reclaimed_blocks, before.reclaimed_blocks);
  EXPECT_EQ(model->kv_stats().num_refusals, 0u);
}

// memory.limit across models: a load-time request of model B is admitted by dropping model A's
// cache.
TEST(PrefixCache, MemoryLimitTakesBackAnotherModelsCacheBeforeRefusing) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  Runtime rt;
  ModelOptions a;
  a.Set("prefix_cache.max_bytes", "64MiB");
  a.Set("model_cache.dir", "off");
  auto ma = rt.Load("a", dir, a);
  ModelOptions b;
  b.Set("model_cache.dir", "off");
  auto mb = rt.Load("b", dir, b);
  for (int i = 0; i < 8; ++i) Greedy(ma, Range(200, 60 + i), 2, "dynamic");
  const uint64_t cache = ma->runtime().Stats().prefix_cache.bytes;
  ASSERT_GT(cache, 0u);
  const uint64_t per_token = mb->info().kv_bytes_per_token;
  const MemoryStats now = rt.Stats();
  // Room for the charge so far plus a 512-token generator only if most of the cache goes.
  rt.SetMemoryLimit(now.used_bytes - cache / 2 + 512 * per_token);
  GeneratorParams p;
  p.max_length = 512;
  Generator g(mb, p);  // static: 512 tokens now
  g.AppendTokens(Range(10, 1));
  EXPECT_LT(ma->runtime().Stats().prefix_cache.bytes, cache);
  EXPECT_LE(rt.Stats().used_bytes, rt.memory_limit());
}

// Shrinks: ShrinkArena, ShrinkAfterNextRun and ReleaseWeights drop the unpinned cache;
// ShrinkEvery does not; pinned blocks survive all of them and serve the next request.
TEST(PrefixCache, ShrinksDropTheCacheButNotWhatIsPinned) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  auto model = Load(dir, "64MiB");
  auto plain = Load(dir, "0");
  ModelControls& c = model->runtime();
  const Tokens system = Range(40, 8);
  const PrefixPin pin = c.PinPrefix(system);
  EXPECT_TRUE(pin.pinned);
  EXPECT_EQ(pin.pinned_tokens, 32u);
  EXPECT_GT(pin.pinned_bytes, 0u);
  Greedy(model, Range(60, 3), 2);  // unpinned blocks
  const uint64_t pinned = model->runtime().Stats().prefix_cache.pinned_bytes;
  ASSERT_GT(model->runtime().Stats().prefix_cache.bytes, pinned);

  c.ShrinkEvery(1);
  Greedy(model, Range(60, 4), 2);
  EXPECT_GT(model->runtime().Stats().prefix_cache.bytes, pinned) << "shrink_every keeps the cache";
  c.ShrinkEvery(0);

  c.ShrinkArena();
  EXPECT_EQ(model->runtime().Stats().prefix_cache.bytes, pinned);
  Greedy(model, Range(60, 5), 2);
  c.ShrinkAfterNextRun();
  Greedy(model, Range(60, 6), 2);
  EXPECT_EQ(model->runtime().Stats().prefix_cache.bytes, pinned);
  Greedy(model, Range(60, 7), 2);
  const WeightsRelease r = c.ReleaseWeights();
  EXPECT_GT(r.prefix_cache_freed_bytes, 0u);
  EXPECT_EQ(model->runtime().Stats().prefix_cache.bytes, pinned);
  EXPECT_EQ(c.DropPrefixCache(), 0u);

  const Tokens prompt = Cat(system, Range(9, 77));
  const Outcome hit = Greedy(model, prompt, 8);
  EXPECT_EQ(hit.cached, 32u);
  ExpectSame(hit, Greedy(plain, prompt, 8), "pinned prefix");

  EXPECT_TRUE(c.UnpinPrefix(system).pinned);
  EXPECT_FALSE(c.UnpinPrefix(system).pinned) << "unpinned twice";
  EXPECT_EQ(model->runtime().Stats().prefix_cache.pinned_bytes, 0u);
  c.ShrinkArena();
  EXPECT_EQ(model->runtime().Stats().prefix_cache.bytes, 0u);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(PrefixCache, PinningRefusesWhatItCannotKeepWithAClearError) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  auto off = Load(dir, "0");
  try {
    off->runtime().PinPrefix(Range(32, 1));
    FAIL() << "pinned with the cache off";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("prefix_cache.max_bytes"));
  }
  auto on = Load(dir, "64MiB");
  try {
    on->runtime().PinPrefix(Range(15, 1));
    FAIL() << "pinned less than a block";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("16 tokens"));
  }
  Tokens bad = Range(32, 1);
  bad[20] = on->info().vocab_size;  // outside the vocabulary
  try {
    on->runtime().PinPrefix(bad);
    FAIL() << "pinned a token outside the vocabulary";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("outside the vocabulary"));
  }
  EXPECT_EQ(on->runtime().Stats().prefix_cache.pinned_bytes, 0u) << "nothing pinned";
  const uint64_t per_token = on->info().kv_bytes_per_token;
  auto small = Load(dir, std::to_string(2 * 16 * per_token + 8192).c_str());
  try {
    small->runtime().PinPrefix(Range(200, 1));
    FAIL() << "pinned past prefix_cache.max_bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("raise prefix_cache.max_bytes"));
  }
  EXPECT_EQ(small->runtime().Stats().prefix_cache.pinned_bytes, 0u) << "nothing pinned";
  // Tier 2: the run option turns it on and off without a reload.
  off->runtime().SetRunOption("prefix_cache.max_bytes", "1MiB");
  EXPECT_EQ(off->runtime().Stats().prefix_cache.max_bytes, 1u << 20);
  EXPECT_TRUE(off->runtime().PinPrefix(Range(32, 1)).pinned);
  off->runtime().SetRunOption("prefix_cache.max_bytes", "0");
  EXPECT_GT(off->runtime().Stats().prefix_cache.bytes, 0u) << "pinned blocks stay";
  off->runtime().UnpinPrefix(Range(32, 1));
  EXPECT_EQ(off->runtime().Stats().prefix_cache.bytes, 0u);
}

// Regression (issue 25, surfaces): a pin of a longer prefix that does not fit, whose stored part
// is exactly a prefix pinned before, undid its own partial pin by unpinning those tokens, and so
// silently unpinned the earlier prefix ("nothing was pinned", but the earlier pin was gone).
TEST(PrefixCache, AFailedPinOfALongerPrefixKeepsTheEarlierPin) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  const uint64_t per_token = Load(dir, "0")->info().kv_bytes_per_token;
  auto model = Load(dir, std::to_string(2 * 16 * per_token).c_str());  // room for 2 blocks
  ModelControls& c = model->runtime();
  const Tokens a = Range(32, 11);
  ASSERT_TRUE(c.PinPrefix(a).pinned);
  const uint64_t pinned = model->runtime().Stats().prefix_cache.pinned_bytes;
  ASSERT_GT(pinned, 0u);
  EXPECT_THROW(c.PinPrefix(Cat(a, Range(48, 12))), Error);
  EXPECT_EQ(model->runtime().Stats().prefix_cache.pinned_bytes, pinned) << "the earlier pin stays";
  EXPECT_TRUE(c.UnpinPrefix(a).pinned);
  EXPECT_EQ(model->runtime().Stats().prefix_cache.pinned_bytes, 0u);
}

// After a shrink, the process holds what a run without the cache holds: the cache's memory
// went back to the OS.
TEST(PrefixCache, RssAfterShrinkIsWithin16MiBOfTheNoCacheRun) {
  // 32 layers of 2 KV heads of 64: 32 KiB of KV per token at little compute.
  const fs::path dir = testing::TestModelsDir() / "llama-kvloop";
  auto model = Load(dir, "0");
  auto requests = [&] {
    for (int i = 0; i < 8; ++i) Greedy(model, Range(250, 300 + i, model->info().vocab_size), 2);
    model->runtime().ShrinkArena();
    return model->runtime().Stats();
  };
  const MemoryStats without = requests();
  model->runtime().SetRunOption("prefix_cache.max_bytes", "256MiB");
  for (int i = 0; i < 8; ++i) Greedy(model, Range(250, 400 + i, model->info().vocab_size), 2);
  ASSERT_GT(model->runtime().Stats().prefix_cache.bytes, 48u << 20)
      << "the cache must hold more than the tolerance for the check to mean anything";
  const MemoryStats with = requests();
  EXPECT_EQ(with.prefix_cache.bytes, 0u);
  EXPECT_LT(with.process.rss_bytes, without.process.rss_bytes + (16 << 20))
      << "without " << without.process.rss_bytes << ", with " << with.process.rss_bytes;
}

}  // namespace
}  // namespace ebb
