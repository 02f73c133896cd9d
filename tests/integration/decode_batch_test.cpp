// Issue 15 item 5: concurrent generators of one model decode in one Run() per step
// (decode_batch.max_rows). Batched greedy tokens equal solo runs; members join and leave between
// steps; a paused member never stalls the others; KV goes back to 0 and the rows' pages to the OS.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <latch>
#include <mutex>
#include <thread>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "generate/decode_batcher.h"
#include "model/model_views.h"
#include "model/step_runner.h"
#include "platform/testing.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Tokens = std::vector<int32_t>;

// Block 32: at synth_model.py's default block 128, ORT's MatMulNBits at several rows flips one
// near-tie of this model against its solo run (tools/make_test_models.sh, docs/memory.md).
fs::path ModelDir() { return testing::TestModelsDir() / "llama-tiny-int4-b32"; }

std::shared_ptr<Model> LoadBatched(int rows, const char* policy = "gather",
                                   const char* wait_us = "2000", const char* cpu_ops = "auto") {
  ModelOptions mo;
  mo.Set("cpu_ops", cpu_ops);
  mo.Set("decode_batch.max_rows", std::to_string(rows));
  mo.Set("decode_batch.policy", policy);
  mo.Set("decode_batch.max_wait_us", wait_us);
  return ebb::LoadModel(ModelDir(), mo);
}

internal::DecodeBatcher* BatcherOf(const std::shared_ptr<Model>& model) {
  return internal::RunView(*model).decode_batcher().get();  // the model keeps it alive
}

Tokens Prompt(int len, int seed) {
  Tokens t;
  for (int i = 0; i < len; ++i) t.push_back(5 + (seed * 131 + i * 37) % 1000);
  return t;
}

Tokens Generate(Generator& g, const Tokens& prompt) {
  g.AppendTokens(prompt);
  while (!g.done()) g.GenerateNextToken();
  auto s = g.sequence(0);
  return Tokens(s.begin(), s.end());
}

Tokens Solo(const std::shared_ptr<Model>& model, const Tokens& prompt, int max_length) {
  GeneratorParams p;
  p.max_length = max_length;
  Generator g(model, p);
  return Generate(g, prompt);
}

class DecodeBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(ModelDir())) GTEST_SKIP() << ModelDir() << " is absent";
  }
};

// The batcher's narrowest and widest stride, seen by the requests after each token.
struct Strides {
  int min = 0, max = 0;
};

// Four requests of different prompt lengths; request k joins once request k-1 has generated 4
// tokens. `cpu_ops` for both the solo and the batched load.
Strides FourStaggeredRequestsMatchSolo(int kMax, const std::vector<Tokens>& prompts,
                                       const char* cpu_ops = "auto") {
  std::vector<Tokens> solo;
  {
    ModelOptions mo;
    mo.Set("cpu_ops", cpu_ops);
    auto plain = ebb::LoadModel(ModelDir(), mo);
    for (const auto& p : prompts) solo.push_back(Solo(plain, p, kMax));
  }
  // A long gather window: members that are decoding are waited for, so steps have several rows
  // even on a loaded machine (done members pause and are not waited for).
  auto model = LoadBatched(4, "gather", "1000000", cpu_ops);
  std::vector<Tokens> got(prompts.size());
  // Request k joins once request k-1 has generated 4 tokens (staggered joins), and request k-1
  // holds there until request k has prefilled: without the hold, a loaded machine could let a
  // tiny request finish before the next one joined, and no step would have two rows.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> produced(prompts.size(), 0);
  std::vector<bool> joined(prompts.size(), false);
  std::atomic<int> max_stride_seen{0}, min_stride_seen{INT_MAX};
  std::vector<std::thread> threads;
  for (size_t k = 0; k < prompts.size(); ++k) {
    threads.emplace_back([&, k] {
      if (k > 0) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return produced[k - 1] >= 4; });
      }
      GeneratorParams p;
      p.max_length = kMax;
      Generator g(model, p);
      g.AppendTokens(prompts[k]);
      {
        std::lock_guard<std::mutex> lock(mu);
        joined[k] = true;
      }
      cv.notify_all();
      while (!g.done()) {
        g.GenerateNextToken();
        const int st = BatcherOf(model)->stride();  // after each token
        int seen = max_stride_seen.load();
        while (st > seen && !max_stride_seen.compare_exchange_weak(seen, st)) {
        }
        seen = min_stride_seen.load();
        while (st < seen && !min_stride_seen.compare_exchange_weak(seen, st)) {
        }
        {
          std::unique_lock<std::mutex> lock(mu);
          ++produced[k];
          cv.notify_all();
          if (produced[k] == 4 && k + 1 < prompts.size()) {
            cv.wait(lock, [&] { return joined[k + 1]; });
          }
        }
      }
      auto s = g.sequence(0);
      got[k].assign(s.begin(), s.end());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < prompts.size(); ++k) EXPECT_EQ(got[k], solo[k]) << "request " << k;
  auto* b = BatcherOf(model);
  EXPECT_NE(b, nullptr);
  if (b == nullptr) return {};
  // Batched for real: more member tokens than Run()s.
  EXPECT_GT(b->stepped_rows(), b->steps());
  // The model's statistics count the same steps and rows (MemoryStats::decode_batch).
  const DecodeBatchStats ds = model->runtime().Stats().decode_batch;
  EXPECT_EQ(ds.max_rows, model->options().decode_batch_max_rows);
  EXPECT_EQ(ds.steps, b->steps());
  EXPECT_EQ(ds.rows, b->stepped_rows());
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_EQ(b->resident_bytes(), 0u);
  return {min_stride_seen.load(), max_stride_seen.load()};
}

TEST_F(DecodeBatch, FourStaggeredRequestsMatchTheirSoloRuns) {
  FourStaggeredRequestsMatchSolo(40, {Prompt(3, 1), Prompt(9, 2), Prompt(17, 3), Prompt(6, 4)});
}

// Rows longer than the first stride: on ORT's attention kernel (whose cost follows the KV
// buffer's width) the region is re-laid wider (several times) while members decode and prefill;
// every request still matches its solo run.
TEST_F(DecodeBatch, WideningTheRowsKeepsEveryRequestsTokens) {
  const Strides s = FourStaggeredRequestsMatchSolo(
      220, {Prompt(70, 1), Prompt(3, 2), Prompt(130, 3), Prompt(20, 4)}, "off");
  EXPECT_GE(s.max, 220);
  EXPECT_LT(s.min, s.max);  // the first tokens ran on a narrower region: it was re-laid
}

// On ebb's attention kernel (cpu_ops; its cost follows each row's valid keys) the region is laid
// out once, at the full context length, and never re-laid; the tokens are the solo runs'.
TEST_F(DecodeBatch, OnEbbsAttentionTheRowsAreLaidOutOnceAtFullWidth) {
  ModelOptions mo;
  mo.Set("cpu_ops", "attention");
  const ModelInfo info = ebb::LoadModel(ModelDir(), mo)->info();
  if (info.kernels.find("ebb.cpu.GroupQueryAttention") == std::string::npos) {
    GTEST_SKIP() << "ebb's attention kernel does not run on this CPU (" << info.kernels << ")";
  }
  const Strides s = FourStaggeredRequestsMatchSolo(
      220, {Prompt(70, 1), Prompt(3, 2), Prompt(130, 3), Prompt(20, 4)}, "attention");
  EXPECT_EQ(s.min, s.max);
  EXPECT_GT(s.max, info.context_length);  // one spare column for a full row's pad
}

// Where the OS refuses the full width's address space (vm.overcommit_memory=2, ulimit -v), the
// region grows as it does on ORT's kernel instead, and the tokens are still the solo run's.
TEST_F(DecodeBatch, WhereTheFullWidthIsRefusedTheRowsGrowAsNeeded) {
  ModelOptions mo;
  mo.Set("cpu_ops", "attention");
  auto plain = ebb::LoadModel(ModelDir(), mo);
  if (plain->info().kernels.find("ebb.cpu.GroupQueryAttention") == std::string::npos) {
    GTEST_SKIP() << "ebb's attention kernel does not run on this CPU (" << plain->info().kernels
                 << ")";
  }
  const Tokens prompt = Prompt(40, 5);
  const Tokens solo = Solo(plain, prompt, 120);
  auto model = LoadBatched(2, "gather", "2000", "attention");
  GeneratorParams p;
  p.max_length = 120;
  Generator g(model, p);
  platform::testing::FailNext(platform::testing::Op::kMapAnonymous, ENOMEM);  // the full width
  EXPECT_EQ(Generate(g, prompt), solo);
  platform::testing::ClearFailures();  // nothing armed leaks into the next test
  ASSERT_NE(BatcherOf(model), nullptr);
  EXPECT_GE(BatcherOf(model)->stride(), 120);
  EXPECT_LT(BatcherOf(model)->stride(), model->info().context_length);
}

// Issue 40: a prompt that arrives while another member decodes runs in chunks of
// decode_batch.prefill_chunk tokens, the batched steps going between them (0: in one Run, as the
// prompt fits prefill_chunk_size). Every Run of the model is recorded in order through the step
// runner's test seam (kDecode: the newcomer's prompt chunks, the decoder runs only batched steps
// by then); both requests must still equal their solo runs.
struct PromptRuns {
  int chunks = 0;         // the newcomer's prompt Runs
  int steps_between = 0;  // batched steps between its first and its last
};

PromptRuns NewcomersPromptRuns(const char* prefill_chunk) {
  const int kDecoderMax = 160, kNewMax = 240;
  const Tokens decoder_prompt = Prompt(4, 21), newcomer_prompt = Prompt(224, 22);
  Tokens solo_decoder, solo_newcomer;
  {
    auto plain = ebb::LoadModel(ModelDir());
    solo_decoder = Solo(plain, decoder_prompt, kDecoderMax);
    solo_newcomer = Solo(plain, newcomer_prompt, kNewMax);
  }
  ModelOptions mo;
  mo.Set("decode_batch.max_rows", "2");
  mo.Set("decode_batch.prefill_chunk", prefill_chunk);
  auto model = ebb::LoadModel(ModelDir(), mo);
  std::mutex mu;
  std::condition_variable cv;
  int produced = 0;
  bool go = false;
  // The kinds of the model's Runs from the moment the newcomer starts, in order.
  auto kinds = std::make_shared<std::vector<internal::StepKind>>();
  auto recording = std::make_shared<std::atomic<bool>>(false);
  auto kinds_mu = std::make_shared<std::mutex>();
  const Model* target = model.get();
  internal::SetStepFaultForTesting(
      [kinds, recording, kinds_mu, target](const Model& m, const internal::StepDesc& step) {
        if (&m == target && recording->load()) {
          std::lock_guard<std::mutex> lock(*kinds_mu);
          kinds->push_back(step.kind);
        }
        return std::string();
      });
  Tokens got_decoder;
  std::thread decoder([&] {
    GeneratorParams p;
    p.max_length = kDecoderMax;
    Generator g(model, p);
    g.AppendTokens(decoder_prompt);
    while (!g.done()) {
      g.GenerateNextToken();
      std::unique_lock<std::mutex> lock(mu);
      if (++produced == 4) {
        cv.notify_all();
        cv.wait(lock, [&] { return go; });  // decoding (it has stepped) when the newcomer starts
      }
    }
    auto s = g.sequence(0);
    got_decoder.assign(s.begin(), s.end());
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return produced >= 4; });
  }
  GeneratorParams p;
  p.max_length = kNewMax;
  Generator g(model, p);
  recording->store(true);
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  g.AppendTokens(newcomer_prompt);
  recording->store(false);
  while (!g.done()) g.GenerateNextToken();
  auto s = g.sequence(0);
  const Tokens got_newcomer(s.begin(), s.end());
  decoder.join();
  internal::SetStepFaultForTesting(nullptr);
  EXPECT_EQ(got_decoder, solo_decoder);
  EXPECT_EQ(got_newcomer, solo_newcomer);
  PromptRuns r;
  std::lock_guard<std::mutex> lock(*kinds_mu);
  int first = -1, last = -1;
  for (int i = 0; i < static_cast<int>(kinds->size()); ++i) {
    if ((*kinds)[i] != internal::StepKind::kDecode) continue;
    ++r.chunks;
    if (first < 0) first = i;
    last = i;
  }
  for (int i = first + 1; first >= 0 && i < last; ++i) {
    if ((*kinds)[i] == internal::StepKind::kBatchedDecode) ++r.steps_between;
  }
  return r;
}

TEST_F(DecodeBatch, ANewcomersPromptLetsTheDecodingMembersStepBetweenItsChunks) {
  // 224 tokens in chunks of 8: 28 Runs, and the decoder, which decodes without pause, has a
  // step ready at about half of the 27 gaps or more (13-24 on an idle machine; it loses the race
  // for the engine when a chunk ends before it has sampled; a loaded machine may let it miss more).
  // Up to 3 attempts on fresh models: in about 1 run in 10 (idle machine, debug build, also at
  // stop 45's code) no step fell between the chunks. Timestamps kept in memory showed why: the
  // test thread got no CPU for ~5 ms right after releasing the decoder (2 cores, ORT's workers
  // spinning), and the decoder decoded all its tokens alone before the newcomer's prompt began
  // (its ~3 ms of chunks then had nobody to interleave with). A scheduling race of the test, not
  // of the batcher. Every attempt must keep both requests' solo tokens and run 28 chunks.
  PromptRuns chunked;
  for (int attempt = 0; attempt < 3; ++attempt) {
    chunked = NewcomersPromptRuns("8");
    EXPECT_EQ(chunked.chunks, 28);
    if (chunked.steps_between >= 5) break;
  }
  EXPECT_GE(chunked.steps_between, 5);
  // 0: prefill_chunk_size (256), so the prompt is one Run and the decoder waits for all of it.
  const PromptRuns whole = NewcomersPromptRuns("0");
  EXPECT_EQ(whole.chunks, 1);
}

TEST_F(DecodeBatch, MembersLeavingMidBatchDoNotDisturbTheOthers) {
  const int kMax = 36;
  const std::vector<Tokens> prompts = {Prompt(5, 7), Prompt(11, 8), Prompt(4, 9), Prompt(8, 10)};
  std::vector<Tokens> solo;
  {
    auto plain = ebb::LoadModel(ModelDir());
    for (const auto& p : prompts) solo.push_back(Solo(plain, p, kMax));
  }
  auto model = LoadBatched(4);
  std::vector<Tokens> got(prompts.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < prompts.size(); ++k) {
    threads.emplace_back([&, k] {
      GeneratorParams p;
      p.max_length = kMax;
      auto g = std::make_unique<Generator>(model, p);
      g->AppendTokens(prompts[k]);
      // Requests 1 and 3 are abandoned (destroyed before done) after a few tokens.
      const int stop_after = k == 1 ? 3 : k == 3 ? 9 : 1 << 20;
      for (int n = 0; !g->done() && n < stop_after; ++n) g->GenerateNextToken();
      auto s = g->sequence(0);
      got[k].assign(s.begin(), s.end());
      g.reset();
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < prompts.size(); ++k) {
    // An abandoned request's tokens are a prefix of its solo run.
    ASSERT_LE(got[k].size(), solo[k].size());
    EXPECT_EQ(got[k], Tokens(solo[k].begin(), solo[k].begin() + got[k].size())) << k;
  }
  EXPECT_EQ(got[0], solo[0]);
  EXPECT_EQ(got[2], solo[2]);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_EQ(BatcherOf(model)->resident_bytes(), 0u);
}

// One member stops asking for tokens (its thread waits on a latch that only opens once the
// others have finished): the others must finish anyway. A stall would deadlock the test.
void PausedMemberDoesNotStall(const char* policy) {
  const int kMax = 30;
  auto model = LoadBatched(3, policy, "200000");  // a long gather window: one wait at most
  std::latch others_done(2);
  std::vector<Tokens> got(3);
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k) {
    threads.emplace_back([&, k] {
      GeneratorParams p;
      p.max_length = kMax;
      Generator g(model, p);
      g.AppendTokens(Prompt(4 + k, 20 + k));
      int n = 0;
      while (!g.done()) {
        if (k == 0 && n == 3) others_done.wait();  // paused mid-generation
        g.GenerateNextToken();
        ++n;
      }
      auto s = g.sequence(0);
      got[k].assign(s.begin(), s.end());
      if (k != 0) others_done.count_down();
    });
  }
  for (auto& t : threads) t.join();
  auto plain = ebb::LoadModel(ModelDir());
  for (int k = 0; k < 3; ++k) EXPECT_EQ(got[k], Solo(plain, Prompt(4 + k, 20 + k), kMax)) << k;
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST_F(DecodeBatch, PausedMemberDoesNotStallTheOthersGather) { PausedMemberDoesNotStall("gather"); }
TEST_F(DecodeBatch, PausedMemberDoesNotStallTheOthersNoWait) {
  PausedMemberDoesNotStall("no-wait");
}

TEST_F(DecodeBatch, KvChargedPerMemberAndPagesGoBackToTheOs) {
  auto model = LoadBatched(2);
  GeneratorParams p;
  p.max_length = 64;
  {
    Generator a(model, p);
    a.AppendTokens(Prompt(10, 1));
    a.GenerateNextToken();
    const uint64_t one = a.Stats().kv_bytes;
    EXPECT_GT(one, 0u);
    EXPECT_EQ(model->kv_stats().in_use_bytes, one);
    auto* b = BatcherOf(model);
    ASSERT_NE(b, nullptr);
    EXPECT_GT(b->resident_bytes(), 0u);
    {
      Generator c(model, p);
      c.AppendTokens(Prompt(5, 2));
      EXPECT_EQ(model->kv_stats().in_use_bytes, 2 * one);
      // Both rows taken: a third generator runs alone (its own pool memory), unchanged.
      Generator d(model, p);
      EXPECT_EQ(model->kv_stats().in_use_bytes, 3 * one);
      d.AppendTokens(Prompt(7, 3));
      d.GenerateNextToken();
    }
    EXPECT_EQ(model->kv_stats().in_use_bytes, one);
  }
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_EQ(BatcherOf(model)->resident_bytes(), 0u);
}

TEST_F(DecodeBatch, KvBudgetRefusesAJoiningRequestCleanly) {
  // Room for the KV of two generators of max_length 64, not three.
  ModelOptions mo;
  mo.Set("decode_batch.max_rows", "4");
  auto probe = ebb::LoadModel(ModelDir());
  uint64_t one = 0;
  {
    GeneratorParams p;
    p.max_length = 64;
    Generator g(probe, p);
    one = g.Stats().kv_bytes;
  }
  mo.Set("kv_cache.max_bytes", std::to_string(2 * one + one / 2));
  auto model = ebb::LoadModel(ModelDir(), mo);
  GeneratorParams p;
  p.max_length = 64;
  Generator a(model, p);
  Generator b(model, p);
  a.AppendTokens(Prompt(6, 1));
  b.AppendTokens(Prompt(6, 2));
  try {
    Generator c(model, p);
    FAIL() << "a third generator should not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("kv_cache.max_bytes"));
  }
  EXPECT_EQ(model->kv_stats().in_use_bytes, 2 * one);
  // The refusal left the batch as it was: both members still decode, batched.
  std::thread ta([&] {
    while (!a.done()) a.GenerateNextToken();
  });
  while (!b.done()) b.GenerateNextToken();
  ta.join();
  auto plain = ebb::LoadModel(ModelDir());
  auto sa = a.sequence(0);
  EXPECT_EQ(Tokens(sa.begin(), sa.end()), Solo(plain, Prompt(6, 1), 64));
}

TEST_F(DecodeBatch, AFailedStepReachesEveryMemberAndChangesNothing) {
  const int kMax = 24;
  auto model = LoadBatched(2, "gather", "200000");
  GeneratorParams p;
  p.max_length = kMax;
  Generator a(model, p), b(model, p);
  a.AppendTokens(Prompt(5, 1));
  b.AppendTokens(Prompt(9, 2));
  a.GenerateNextToken();  // from the prefill's logits
  b.GenerateNextToken();
  auto both = [&](const std::function<void(Generator&)>& fn) {
    std::thread t([&] { fn(a); });
    fn(b);
    t.join();
  };
  // The first step with both members fails: both get the error, in the same round.
  BatcherOf(model)->FailNextStepForTesting(2);
  std::atomic<int> failed{0};
  for (int round = 0; round < 10 && failed == 0; ++round) {
    both([&](Generator& g) {
      try {
        g.GenerateNextToken();
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Internal);
        EXPECT_THAT(e.what(), HasSubstr("injected batched Run() failure"));
        ++failed;
      }
    });
  }
  EXPECT_EQ(failed.load(), 2);
  // Each generator is as before the failed call: finishing gives the solo tokens.
  both([](Generator& g) {
    while (!g.done()) g.GenerateNextToken();
  });
  auto plain = ebb::LoadModel(ModelDir());
  auto sa = a.sequence(0), sb = b.sequence(0);
  EXPECT_EQ(Tokens(sa.begin(), sa.end()), Solo(plain, Prompt(5, 1), kMax));
  EXPECT_EQ(Tokens(sb.begin(), sb.end()), Solo(plain, Prompt(9, 2), kMax));
}

TEST_F(DecodeBatch, RewindThenDecodeMatchesSolo) {
  auto run = [](const std::shared_ptr<Model>& model, Generator* other) {
    GeneratorParams p;
    p.max_length = 32;
    Generator g(model, p);
    g.AppendTokens(Prompt(7, 3));
    for (int i = 0; i < 10; ++i) g.GenerateNextToken();
    g.RewindTo(12);
    std::thread t;
    if (other != nullptr) {
      t = std::thread([other] {
        while (!other->done()) other->GenerateNextToken();
      });
    }
    while (!g.done()) g.GenerateNextToken();
    if (t.joinable()) t.join();
    auto s = g.sequence(0);
    return Tokens(s.begin(), s.end());
  };
  auto plain = ebb::LoadModel(ModelDir());
  auto model = LoadBatched(2);
  GeneratorParams p;
  p.max_length = 32;
  Generator other(model, p);
  other.AppendTokens(Prompt(4, 5));
  EXPECT_EQ(run(model, &other), run(plain, nullptr));
  EXPECT_GT(BatcherOf(model)->steps(), 0u);
}

TEST_F(DecodeBatch, MemoryLimitRefusesAJoiningRequestCleanly) {
  auto model = LoadBatched(4);
  const uint64_t one = model->info().kv_bytes_per_token * 64;
  // Two generators' KV beside the weights of every model the default runtime holds, not three.
  Runtime::Default().SetMemoryLimit(Runtime::Default().Stats().weights_bytes + 2 * one + one / 2);
  {
    GeneratorParams p;
    p.max_length = 64;
    Generator a(model, p), b(model, p);
    a.AppendTokens(Prompt(6, 1));
    b.AppendTokens(Prompt(3, 2));
    try {
      Generator c(model, p);
      ADD_FAILURE() << "expected ResourceExhausted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("memory.limit"));
    }
    EXPECT_EQ(model->kv_stats().in_use_bytes, 2 * one);
    std::thread t([&] {
      while (!a.done()) a.GenerateNextToken();
    });
    while (!b.done()) b.GenerateNextToken();
    t.join();
    EXPECT_GT(BatcherOf(model)->steps(), 0u);
  }
  EXPECT_EQ(Runtime::Default().Stats().kv.in_use_bytes, 0u);
  Runtime::Default().SetMemoryLimit(0);
}

TEST_F(DecodeBatch, OptionsAreCheckedWithClearErrors) {
  ModelOptions mo;
  auto expect_error = [&](const char* key, const char* value, const char* needle) {
    try {
      mo.Set(key, value);
      ADD_FAILURE() << key << "=" << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(needle)) << key << "=" << value;
    }
  };
  expect_error("decode_batch.max_rows", "0", "decode_batch.max_rows");
  expect_error("decode_batch.max_rows", "65", "1 to 64");
  expect_error("decode_batch.max_rows", "four", "decode_batch.max_rows");
  expect_error("decode_batch.policy", "fifo", "gather");
  expect_error("decode_batch.max_wait_us", "-1", "decode_batch.max_wait_us");
  expect_error("decode_batch.prefill_chunk", "-8", "0 to 2147483647");
  expect_error("decode_batch.prefill_chunk", "half", "decode_batch.prefill_chunk");
  expect_error("decode_batch.max_row", "4", "decode_batch.max_rows");  // did you mean
  GeneratorParams gp;
  EXPECT_THROW(gp.Set("decode_batch.max_rows", "4"), Error);  // a model key, not a request key
  mo.Set("decode_batch.max_rows", "8");
  mo.Set("decode_batch.policy", "no-wait");
  mo.Set("decode_batch.max_wait_us", "0");
  EXPECT_EQ(mo.decode_batch_prefill_chunk, 32);  // the default
  mo.Set("decode_batch.prefill_chunk", "0");
  EXPECT_EQ(mo.decode_batch_prefill_chunk, 0);
  EXPECT_EQ(mo.decode_batch_max_rows, 8);
  EXPECT_TRUE(mo.decode_batch_no_wait);
  EXPECT_EQ(mo.decode_batch_max_wait_us, 0);
}

TEST_F(DecodeBatch, OffByDefault) {
  auto model = ebb::LoadModel(ModelDir());
  EXPECT_EQ(model->options().decode_batch_max_rows, 1);
  GeneratorParams p;
  p.max_length = 20;
  Generator a(model, p), b(model, p);
  std::thread t([&] { Generate(a, Prompt(4, 1)); });
  Generate(b, Prompt(6, 2));
  t.join();
  EXPECT_EQ(BatcherOf(model), nullptr);
  EXPECT_EQ(a.Stats().model_runs, a.Stats().generated_tokens);  // 1 prefill + 1 per later token
}

// ModelOptions::decode_batch_default_rows (ebb serve's --parallel) turns batching on where it is
// off; rows asked for in decode_batch.max_rows win (that an explicit 1 keeps it off is the
// manager's rule: ModelManager.DefaultBatchRowsGoOnlyToModelsWhoseOptionsDoNotNameThem).
TEST_F(DecodeBatch, DefaultRowsApplyOnlyWhereBatchingIsOff) {
  ModelOptions dflt;
  dflt.decode_batch_default_rows = 3;
  auto model = ebb::LoadModel(ModelDir(), dflt);
  EXPECT_EQ(model->options().decode_batch_max_rows, 3);
  EXPECT_EQ(model->runtime().Stats().decode_batch.max_rows, 3);
  GeneratorParams p;
  p.max_length = 20;
  Generator a(model, p);
  Generate(a, Prompt(4, 1));
  EXPECT_NE(BatcherOf(model), nullptr);  // it decoded through the batcher
  EXPECT_GT(model->runtime().Stats().decode_batch.steps, 0u);

  ModelOptions two;
  two.Set("decode_batch.max_rows", "2");
  two.decode_batch_default_rows = 3;
  EXPECT_EQ(ebb::LoadModel(ModelDir(), two)->options().decode_batch_max_rows, 2);
}

// Graphs that cannot join (batch_size > 1 generators) keep today's path on a batching model.
TEST_F(DecodeBatch, BatchGeneratorsKeepTheirOwnPath) {
  auto model = LoadBatched(4);
  GeneratorParams p;
  p.max_length = 20;
  p.batch_size = 2;
  Generator g(model, p);
  g.AppendTokens(std::vector<Tokens>{Prompt(4, 1), Prompt(7, 2)});
  while (!g.done()) g.GenerateNextToken();
  auto* b = BatcherOf(model);
  EXPECT_TRUE(b == nullptr || b->steps() == 0);
}

}  // namespace
}  // namespace ebb
