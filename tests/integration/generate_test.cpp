// Generation against published results (onnxruntime-genai's gpt2 fixture) and an independent
// NumPy reference (tools/reference_forward.py), plus bad inputs and KV ownership.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Rows = std::vector<std::vector<int32_t>>;

Rows GenerateAll(const std::shared_ptr<Model>& model, const Rows& prompts, GeneratorParams p) {
  p.batch_size = static_cast<int32_t>(prompts.size());
  Generator g(model, p);
  g.AppendTokens(prompts);
  while (!g.done()) g.GenerateNextToken();
  Rows out;
  for (size_t r = 0; r < prompts.size(); ++r) {
    auto s = g.sequence(r);
    out.emplace_back(s.begin(), s.end());
  }
  return out;
}

struct Variant {
  KvMode mode;
  int32_t chunk;
};
const Variant kVariants[] = {
    {KvMode::kStatic, 0}, {KvMode::kDynamic, 0}, {KvMode::kStatic, 2}, {KvMode::kDynamic, 3}};

// --- onnxruntime-genai's published results on its tiny-random-gpt2 fixture ----------------------

TEST(Gpt2Fixture, ReproducesPublishedGreedySequencesAndLogits) {
  const fs::path dir = testing::SharedDir() / "models/tiny-random-gpt2-fp32";
  EBB_SKIP_UNLESS_EXISTS(dir);
  const Rows prompts = {{0, 0, 0, 52}, {0, 0, 195, 731}};
  const Rows expected = {{0, 0, 0, 52, 204, 204, 204, 204, 204, 204},
                         {0, 0, 195, 731, 731, 114, 114, 114, 114, 114}};
  for (const Variant& v : kVariants) {
    ModelOptions mo;
    mo.kv_mode = v.mode;
    mo.kv_chunk_tokens = 3;  // several dynamic growths within max_length 10
    mo.prefill_chunk_size = v.chunk;
    auto model = ebb::LoadModel(dir, mo);
    GeneratorParams p;
    p.max_length = 10;
    EXPECT_EQ(GenerateAll(model, prompts, p), expected)
        << "mode " << KvModeName(v.mode) << " chunk " << v.chunk;
  }
  // Prompt logits at vocabulary indices 0, 200, 400, 600, 800.
  auto model = ebb::LoadModel(dir);
  GeneratorParams p;
  p.max_length = 10;
  p.batch_size = 2;
  Generator g(model, p);
  g.AppendTokens(prompts);
  const auto logits = g.GetLogits();
  ASSERT_EQ(logits.size(), 2u * 1000);
  const float want[2][5] = {{-0.12675379f, -0.04443946f, 0.14492269f, 0.03021223f, -0.03212897f},
                            {0.2938929f, -0.10538938f, -0.00226692f, 0.12050669f, -0.10622668f}};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(logits[r * 1000 + i * 200], want[r][i], 1e-3);
  }
}

// --- The NumPy reference forward pass on synthesized llama-style models ------------------------

class ReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceTest, MatchesNumpyReferenceInEveryKvModeAndLayout) {
  const fs::path dir = testing::TestModelsDir() / GetParam();
  ASSERT_TRUE(fs::exists(dir / "reference_greedy.json")) << dir << " (fixture synth_test_models)";
  const auto ref = nlohmann::json::parse(std::ifstream(dir / "reference_greedy.json"));
  const Rows prompts = ref["input_ids"].get<Rows>();
  const Rows expected = ref["sequences"].get<Rows>();
  const int32_t max_length = ref["max_length"].get<int32_t>();
  ASSERT_EQ(prompts.size(), 3u) << "tools/make_test_models.sh writes a batch of 3";
  for (const Variant& v : kVariants) {
    ModelOptions mo;
    mo.kv_mode = v.mode;
    mo.kv_chunk_tokens = 4;
    mo.prefill_chunk_size = v.chunk;
    auto model = ebb::LoadModel(dir, mo);
    GeneratorParams p;
    p.max_length = max_length;
    const std::string what = std::string(KvModeName(v.mode)) + " chunk " + std::to_string(v.chunk);
    // A padded batch of 3 rows with different lengths (6, 3, 4 tokens), and each row alone.
    EXPECT_EQ(GenerateAll(model, prompts, p), expected) << "batch, " << what;
    for (size_t r = 0; r < prompts.size(); ++r) {
      EXPECT_EQ(GenerateAll(model, {prompts[r]}, p)[0], expected[r]) << "row " << r << ", " << what;
    }
    EXPECT_EQ(model->kv_stats().in_use_bytes, 0u) << "KV still in use after the generators died";
  }
}

INSTANTIATE_TEST_SUITE_P(Ref, ReferenceTest,
                         ::testing::Values("llama-tiny-fp32", "llama-tiny-int4",
                                           "phi3-tiny-fp32-unfused", "qwen2-tiny-fp32",
                                           "llama-tiny-fp16io"));

// A static shared-buffer cache is laid out only as wide as the steps need and widened in place
// (kv_cache.h); a long generation crosses several widenings (1.5x each, up to max_length 320),
// in a padded batch of rows of different lengths and with chunked prefill. The dynamic cache,
// which reallocates instead, must give the same tokens.
TEST(KvWidth, StaticLayoutWidensInPlaceAndMatchesDynamic) {
  const fs::path dir = testing::TestModelsDir() / "llama-tiny-fp32";
  Rows prompts;
  for (int n : {5, 70, 23}) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back((i * 37 + n) % 1000 + 10);
    prompts.push_back(p);
  }
  Rows by_mode[2];
  Rows alone[2];
  for (KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
    ModelOptions mo;
    mo.kv_mode = mode;
    mo.kv_chunk_tokens = 16;
    mo.prefill_chunk_size = 32;
    auto model = ebb::LoadModel(dir, mo);
    GeneratorParams p;
    p.max_length = 320;
    by_mode[mode == KvMode::kDynamic] = GenerateAll(model, prompts, p);
    alone[mode == KvMode::kDynamic] = GenerateAll(model, {prompts[1]}, p);
  }
  ASSERT_EQ(by_mode[0][0].size(), 320u);
  EXPECT_EQ(by_mode[0], by_mode[1]);
  EXPECT_EQ(alone[0], alone[1]);
  // A row decodes the same in the batch as alone (right padding: its own length).
  EXPECT_EQ(alone[0][0], by_mode[0][1]);
}

TEST(Fp16, KvCacheAndLogitsInFloat16) {
  auto f32 = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32");
  auto f16 = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp16io");
  EXPECT_EQ(f16->info().kv_bytes_per_token * 2, f32->info().kv_bytes_per_token);
  GeneratorParams p;
  p.max_length = 8;
  Generator a(f32, p), b(f16, p);
  a.AppendTokens(std::vector<int32_t>{5, 17, 42});
  b.AppendTokens(std::vector<int32_t>{5, 17, 42});
  ASSERT_EQ(a.GetLogits().size(), b.GetLogits().size());
  for (size_t i = 0; i < a.GetLogits().size(); ++i) {
    EXPECT_NEAR(a.GetLogits()[i], b.GetLogits()[i], 2e-2) << "logit " << i;  // fp16 rounding
  }
}

// --- KV ownership and budgets -----------------------------------------------------------------

std::shared_ptr<Model> Tiny(ModelOptions mo = {}) {
  return ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32", mo);
}

TEST(KvOwnership, GeneratorOwnsItsCacheAndGivesItBack) {
  auto model = Tiny();
  const uint64_t per_token = model->info().kv_bytes_per_token;
  {
    GeneratorParams p;
    p.max_length = 64;
    Generator g(model, p);  // static: max_length reserved up front
    EXPECT_GE(model->kv_stats().in_use_bytes, per_token * 64);
    g.AppendTokens(std::vector<int32_t>{1, 2, 3});
    g.GenerateNextToken();
  }
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_EQ(model->kv_stats().reserved_bytes, 0u) << "retain_bytes=0 must unmap at once";
  EXPECT_GE(model->kv_stats().peak_in_use_bytes, per_token * 64);
}

TEST(KvOwnership, RetainBytesKeepsFreedMemoryForReuse) {
  ModelOptions mo;
  mo.kv_retain_bytes = 64ull << 20;
  auto model = Tiny(mo);
  { Generator g(model, GeneratorParams{.max_length = 64}); }
  const KvStats after = model->kv_stats();
  EXPECT_EQ(after.in_use_bytes, 0u);
  EXPECT_GT(after.reserved_bytes, 0u);
  { Generator g(model, GeneratorParams{.max_length = 64}); }
  EXPECT_EQ(model->kv_stats().reserved_bytes, after.reserved_bytes) << "reused, not re-mapped";
}

TEST(KvOwnership, DynamicModeGrowsWithTheSequence) {
  ModelOptions mo;
  mo.kv_mode = KvMode::kDynamic;
  mo.kv_chunk_tokens = 8;
  auto model = Tiny(mo);
  GeneratorParams p;
  p.max_length = 256;
  Generator g(model, p);
  EXPECT_EQ(g.Stats().kv_bytes, 0u);
  g.AppendTokens(std::vector<int32_t>{1, 2, 3});
  const uint64_t small = g.Stats().kv_bytes;
  EXPECT_GT(small, 0u);
  EXPECT_LT(small, model->info().kv_bytes_per_token * 64);
  for (int i = 0; i < 20; ++i) g.GenerateNextToken();
  EXPECT_GT(g.Stats().kv_bytes, small);
}

TEST(KvOwnership, BudgetRefusesClearlyAndOthersAreUnaffected) {
  auto probe = Tiny();
  const uint64_t per_token = probe->info().kv_bytes_per_token;
  ModelOptions mo;
  mo.kv_max_bytes = per_token * 100;
  auto model = Tiny(mo);
  Generator ok(model, GeneratorParams{.max_length = 64});
  ok.AppendTokens(std::vector<int32_t>{4, 5, 6});
  try {
    Generator too_big(model, GeneratorParams{.max_length = 64});
    FAIL() << "expected ResourceExhausted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("kv_cache.max_bytes"));
    EXPECT_THAT(e.what(), HasSubstr("bytes in use"));
  }
  EXPECT_EQ(model->kv_stats().num_refusals, 1u);
  while (!ok.done()) ok.GenerateNextToken();  // the running generator is unaffected
  EXPECT_EQ(ok.sequence(0).size(), 64u);
}

// --- Sampling ---------------------------------------------------------------------------------

TEST(Sampling, SameSeedSameTokensOtherSeedOtherTokens) {
  auto model = Tiny();
  auto run = [&](uint64_t seed) {
    GeneratorParams p;
    p.max_length = 40;
    p.do_sample = true;
    p.top_k = 50;
    p.top_p = 0.9f;
    p.temperature = 1.5f;
    p.repetition_penalty = 1.1f;
    p.seed = seed;
    return GenerateAll(model, {{7, 8, 9}}, p)[0];
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

// --- RewindTo ---------------------------------------------------------------------------------

TEST(Rewind, KeepsBuffersAndRegeneratesTheSameTokens) {
  for (KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
    ModelOptions mo;
    mo.kv_mode = mode;
    auto model = Tiny(mo);
    GeneratorParams p;
    p.max_length = 24;
    Generator g(model, p);
    g.AppendTokens(std::vector<int32_t>{5, 17, 42, 99});
    while (!g.done()) g.GenerateNextToken();
    const std::vector<int32_t> first(g.sequence(0).begin(), g.sequence(0).end());
    const uint64_t kv = g.Stats().kv_bytes;
    g.RewindTo(10);
    EXPECT_EQ(g.Stats().kv_bytes, kv) << "RewindTo keeps the buffers";
    while (!g.done()) g.GenerateNextToken();
    EXPECT_EQ(std::vector<int32_t>(g.sequence(0).begin(), g.sequence(0).end()), first)
        << KvModeName(mode);
    g.RewindTo(0);
    g.AppendTokens(std::vector<int32_t>{5, 17, 42, 99});
    while (!g.done()) g.GenerateNextToken();
    EXPECT_EQ(std::vector<int32_t>(g.sequence(0).begin(), g.sequence(0).end()), first);
  }
}

// --- Bad input: a clear error, and the model stays usable -------------------------------------

void ExpectError(const std::function<void()>& fn, ErrorCode code, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

TEST(BadInput, ClearErrorsAndTheModelStaysUsable) {
  auto model = Tiny();
  const Rows good = {{5, 17, 42, 99, 7, 300}};
  GeneratorParams p;
  p.max_length = 12;
  const Rows expected = GenerateAll(model, good, p);

  {
    Generator g(model, p);
    ExpectError(
        [&] {
          g.AppendTokens(std::vector<int32_t>{1, 1024});
        },
        ErrorCode::InvalidArgument, "outside the vocabulary [0, 1024)");
    ExpectError([&] { g.AppendTokens(std::vector<int32_t>(13, 1)); }, ErrorCode::InvalidArgument,
                "max_length is 12");
    ExpectError(
        [&] {
          g.AppendTokens(Rows{{1}, {2}});
        },
        ErrorCode::InvalidArgument, "batch_size is 1");
    ExpectError([&] { g.GenerateNextToken(); }, ErrorCode::FailedPrecondition, "AppendTokens");
    // After the failures, the same generator still works.
    g.AppendTokens(good[0]);
    while (!g.done()) g.GenerateNextToken();
    EXPECT_EQ(std::vector<int32_t>(g.sequence(0).begin(), g.sequence(0).end()), expected[0]);
    ExpectError([&] { g.AppendTokens(std::vector<int32_t>{1}); }, ErrorCode::FailedPrecondition,
                "done");
    ExpectError([&] { g.GenerateNextToken(); }, ErrorCode::FailedPrecondition, "done");
    ExpectError([&] { g.RewindTo(13); }, ErrorCode::InvalidArgument, "past the sequence length");
  }
  {
    GeneratorParams big = p;
    big.max_length = 1 << 20;  // above context_length: clamped, documented in docs/memory.md
    ModelOptions dyn;
    dyn.kv_mode = KvMode::kDynamic;
    auto dmodel = Tiny(dyn);
    Generator g(dmodel, big);
    EXPECT_EQ(g.max_length(), dmodel->info().context_length);
  }
  ExpectError([&] { Generator g(model, GeneratorParams{.batch_size = 0}); },
              ErrorCode::InvalidArgument, "batch_size");
  EXPECT_EQ(GenerateAll(model, good, p), expected) << "the model is still usable";
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(BadInput, CorruptOrMissingModelFilesNameTheFile) {
  const fs::path src = testing::TestModelsDir() / "llama-tiny-fp32";
  const fs::path dir = fs::temp_directory_path() / "ebb_bad_model_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"genai_config.json", "model.onnx"}) fs::copy_file(src / f, dir / f);

  // Truncated model file.
  fs::resize_file(dir / "model.onnx", fs::file_size(dir / "model.onnx") / 3);
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument, "model.onnx");
  // Missing model file.
  fs::remove(dir / "model.onnx");
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::NotFound, "model.onnx does not exist");
  // Wrong config: a graph input name that does not exist.
  fs::copy_file(src / "model.onnx", dir / "model.onnx");
  auto cfg = nlohmann::json::parse(std::ifstream(src / "genai_config.json"));
  cfg["model"]["decoder"]["inputs"]["past_key_names"] = "past.%d.k";
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument, "no input 'past.0.k'");
  // Inconsistent head counts.
  cfg = nlohmann::json::parse(std::ifstream(src / "genai_config.json"));
  cfg["model"]["decoder"]["num_key_value_heads"] = 3;
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument, "inconsistent head counts");
  // Unknown model type.
  cfg = nlohmann::json::parse(std::ifstream(src / "genai_config.json"));
  cfg["model"]["type"] = "transformerx";
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument, "unknown model type");
  // Issue 24 item 8: a huge vocab_size is refused before anything is sized by it, and one that
  // is not the graph's logits width is refused naming the right value.
  cfg = nlohmann::json::parse(std::ifstream(src / "genai_config.json"));
  const int64_t vocab = cfg["model"]["vocab_size"].get<int64_t>();
  cfg["model"]["vocab_size"] = 1000000000;
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument,
              "vocab_size: 1000000000 is above ebb's bound");
  cfg["model"]["vocab_size"] = vocab + 8;
  cfg["model"]["pad_token_id"] = 0;
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument,
              "fix vocab_size in genai_config.json to " + std::to_string(vocab));
  cfg["model"]["vocab_size"] = vocab;
  cfg["model"]["context_length"] = 1 << 30;
  std::ofstream(dir / "genai_config.json") << cfg.dump();
  ExpectError([&] { ebb::LoadModel(dir); }, ErrorCode::InvalidArgument,
              "context_length: 1073741824 is above ebb's bound");
  // Misspelled ebb option.
  ModelOptions mo;
  ExpectError([&] { mo.Set("kv_cache.mdoe", "static"); }, ErrorCode::InvalidArgument,
              "did you mean 'kv_cache.mode'");
  fs::remove_all(dir);
  // A good model still loads after all that.
  EXPECT_NO_THROW(ebb::LoadModel(src));
}

}  // namespace
}  // namespace ebb
