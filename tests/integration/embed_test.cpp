// Issue 12: embeddings. Encoder folders (genai_config.json and sentence-transformers layouts),
// pooling and normalisation against the NumPy reference, padding invariance, truncation and
// input errors, the same memory controls and observers as decoders, the CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/process_memory.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "embed/embedder.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
constexpr int64_t kMiB = 1 << 20;

fs::path Bert() { return testing::TestModelsDir() / "bert-tiny-fp32"; }
fs::path MiniLmShape() { return testing::TestModelsDir() / "minilm-shape-fp32"; }
fs::path Llama() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

nlohmann::json ReadJson(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return d;
}

double Norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

// A text of about `words` words from the synthetic tokenizer's corpus vocabulary.
std::string Text(int words, int salt = 0) {
  static const char* kWords[] = {"the",  "river", "ran",     "low",    "that",  "summer",
                                 "and",  "model", "memory",  "tokens", "bread", "fish",
                                 "rain", "paris", "weather", "window", "apple", "school"};
  std::string s;
  for (int i = 0; i < words; ++i) {
    s += (i ? " " : "") + std::string(kWords[(i * 7 + salt * 3 + i / 3) % 18]);
  }
  return s;
}

EmbedResult EmbedTexts(const std::shared_ptr<Model>& m, std::vector<std::string> texts,
                       EmbedOptions o = {}) {
  EmbedRequest r;
  r.texts = std::move(texts);
  r.options = o;
  return Embed(m, r);
}

// ---- Done-when 1: the NumPy reference (tools/reference_forward.py --embed) -----------------

TEST(EmbedReference, MeanAndClsWithAndWithoutNormalisationMatchNumpy) {
  const fs::path ref_path = Bert() / "reference_embed.json";
  ASSERT_TRUE(fs::exists(ref_path)) << "tools/make_test_models.sh writes it";
  const auto ref = ReadJson(ref_path);
  auto m = ebb::LoadModel(Bert());
  EXPECT_TRUE(m->info().is_encoder);
  EmbedRequest req;
  req.input_ids = ref["input_ids"].get<std::vector<std::vector<int32_t>>>();
  ASSERT_GE(req.input_ids.size(), 3u);
  for (const auto& [pooling, key] : {std::pair{Pooling::kMean, "mean"}, {Pooling::kCls, "cls"}}) {
    for (bool normalize : {false, true}) {
      SCOPED_TRACE(std::string(key) + (normalize ? " normalized" : " raw"));
      req.options.pooling = pooling;
      req.options.normalize = normalize;
      const EmbedResult r = Embed(m, req);
      EXPECT_EQ(r.pooling, pooling);
      const auto want = ref[std::string(key) + (normalize ? "_normalized" : "")]
                            .get<std::vector<std::vector<float>>>();
      ASSERT_EQ(r.embeddings.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(MaxAbsDiff(r.embeddings[i], want[i]), 1e-4) << "row " << i;
        EXPECT_GE(Cosine(r.embeddings[i], want[i]), 0.99999) << "row " << i;
      }
      if (normalize) {
        EXPECT_NEAR(Norm(r.embeddings[0]), 1.0, 1e-5);
      }
    }
  }
}

// sentence-transformers' other Pooling modes, on the same rows (of lengths 5, 3 and 15, so one
// padded Run): masked max, sum / sqrt(n), and the position-weighted mean (weights 1..n).
TEST(EmbedReference, MaxMeanSqrtLenAndWeightedMeanMatchNumpy) {
  const auto ref = ReadJson(Bert() / "reference_embed.json");
  ASSERT_TRUE(ref.contains("weightedmean")) << "regenerate with tools/make_test_models.sh";
  auto m = ebb::LoadModel(Bert());
  EmbedRequest req;
  req.input_ids = ref["input_ids"].get<std::vector<std::vector<int32_t>>>();
  for (const auto& [pooling, key] : {std::pair{Pooling::kMax, "max"},
                                     {Pooling::kMeanSqrtLen, "mean_sqrt_len"},
                                     {Pooling::kWeightedMean, "weightedmean"}}) {
    for (bool normalize : {false, true}) {
      SCOPED_TRACE(std::string(key) + (normalize ? " normalized" : " raw"));
      req.options.pooling = pooling;
      req.options.normalize = normalize;
      const EmbedResult r = Embed(m, req);
      EXPECT_EQ(r.pooling, pooling);
      EXPECT_EQ(r.normalized, normalize);
      EXPECT_EQ(r.num_runs, 1) << "all rows padded into one batch";
      const auto want = ref[std::string(key) + (normalize ? "_normalized" : "")]
                            .get<std::vector<std::vector<float>>>();
      ASSERT_EQ(r.embeddings.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(MaxAbsDiff(r.embeddings[i], want[i]), 1e-4) << "row " << i;
        EXPECT_GE(Cosine(r.embeddings[i], want[i]), 0.99999) << "row " << i;
      }
    }
  }
  // The three are different vectors (a mode silently falling back to mean would match its own
  // reference only by accident): weightedmean and mean_sqrt_len differ from mean.
  const auto mean = ref["mean"].get<std::vector<std::vector<float>>>();
  EXPECT_GT(MaxAbsDiff(mean[0], ref["weightedmean"][0].get<std::vector<float>>()), 1e-3);
  EXPECT_GT(MaxAbsDiff(mean[0], ref["mean_sqrt_len"][0].get<std::vector<float>>()), 1e-3);
}

// ---- Done-when 2: padding invariance ----------------------------------------------------------

TEST(EmbedBatching, EachVectorIsTheSameAloneInAMixedBatchAndInAnyOrder) {
  auto m = ebb::LoadModel(Bert());
  std::vector<std::string> texts;
  for (int w : {1, 40, 3, 120, 7, 2, 60, 15}) texts.push_back(Text(w, w));
  std::vector<std::vector<float>> alone;
  for (const auto& t : texts) alone.push_back(EmbedTexts(m, {t}).embeddings.at(0));

  EmbedOptions one_batch;  // everything in one padded Run
  one_batch.batch_size = 64;
  one_batch.max_batch_tokens = 1 << 20;
  one_batch.max_padding = 0;  // no padding cap: all eight texts in one Run
  const EmbedResult mixed = EmbedTexts(m, texts, one_batch);
  EXPECT_EQ(mixed.num_runs, 1);
  EXPECT_GT(mixed.padded_tokens, mixed.usage.prompt_tokens) << "the batch must be padded";

  EmbedOptions small;  // length buckets of two
  small.batch_size = 2;
  small.max_padding = 0;
  std::vector<std::string> reversed(texts.rbegin(), texts.rend());
  const EmbedResult rev = EmbedTexts(m, reversed, small);
  EXPECT_EQ(rev.num_runs, 4);
  std::vector<size_t> perm{3, 0, 6, 1, 7, 2, 5, 4};
  std::vector<std::string> shuffled;
  for (size_t i : perm) shuffled.push_back(texts[i]);
  const EmbedResult shuf = EmbedTexts(m, shuffled, one_batch);

  for (size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE("text " + std::to_string(i));
    EXPECT_LE(MaxAbsDiff(mixed.embeddings[i], alone[i]), 1e-5);
    EXPECT_LE(MaxAbsDiff(rev.embeddings[texts.size() - 1 - i], alone[i]), 1e-5);
  }
  for (size_t k = 0; k < perm.size(); ++k) {
    EXPECT_LE(MaxAbsDiff(shuf.embeddings[k], alone[perm[k]]), 1e-5);
  }
  // Distinct texts give distinct vectors (the comparison above is not vacuous).
  EXPECT_LT(Cosine(alone[0], alone[3]), 0.999);
}

TEST(EmbedBatching, BucketsAreSortedByLengthAndRespectBothCaps) {
  const std::vector<size_t> lengths{50, 3, 10, 3, 200, 11, 9};
  const auto b = internal::PlanEmbedBatches(lengths, 2, 1000);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], (std::vector<size_t>{1, 3}));
  EXPECT_EQ(b[1], (std::vector<size_t>{6, 2}));
  EXPECT_EQ(b[2], (std::vector<size_t>{5, 0}));
  EXPECT_EQ(b[3], (std::vector<size_t>{4}));
  // Token budget: 3 rows of 10 fit 30, not 40 with an 11.
  const auto t = internal::PlanEmbedBatches({10, 10, 10, 11}, 64, 30);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].size(), 3u);
  // A row over the budget runs alone.
  const auto big = internal::PlanEmbedBatches({5000, 4}, 64, 100);
  ASSERT_EQ(big.size(), 2u);
}

TEST(EmbedBatching, MaxPaddingCutsABucketWhenPaddingWouldExceedTheRatio) {
  const std::vector<size_t> lengths{400, 10, 110, 12, 100, 10};
  // No cap: one Run of 6 x 400.
  EXPECT_EQ(internal::PlanEmbedBatches(lengths, 64, 1 << 20, 0).size(), 1u);
  // 1.25: the three short rows (36 padded, under the 128-token floor), then 100 and 110
  // (220 padded <= 1.25 x 210), then 400 alone (1,200 > 1.25 x 610).
  const auto b = internal::PlanEmbedBatches(lengths, 64, 1 << 20, 1.25);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<size_t>{1, 5, 3}));
  EXPECT_EQ(b[1], (std::vector<size_t>{4, 2}));
  EXPECT_EQ(b[2], (std::vector<size_t>{0}));
  // Rows whose Run stays within 128 padded tokens share it whatever their lengths.
  EXPECT_EQ(internal::PlanEmbedBatches({3, 60}, 64, 1 << 20, 1.0).size(), 1u);
  EXPECT_EQ(internal::PlanEmbedBatches({3, 70}, 64, 1 << 20, 1.0).size(), 2u);
}

// ---- Done-when 3: truncation and input errors -------------------------------------------------

TEST(EmbedInput, OverLongInputsAreTruncatedOrRefusedPerPolicyNamingTheLimit) {
  auto m = ebb::LoadModel(Bert());
  const int32_t limit = m->info().context_length;
  ASSERT_EQ(limit, 512);
  std::vector<int32_t> row{2};
  for (int i = 0; i < 700; ++i) row.push_back(10 + i % 500);
  row.push_back(3);
  EmbedRequest req;
  req.input_ids = {row};
  req.options.truncate = Truncate::kError;
  try {
    Embed(m, req);
    FAIL() << "truncate=error must refuse";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("702 tokens"));
    EXPECT_THAT(e.what(), HasSubstr("limit of 512"));
  }
  req.options.truncate = Truncate::kEnd;
  const EmbedResult end = Embed(m, req);
  EXPECT_EQ(end.num_truncated, 1);
  EXPECT_EQ(end.usage.prompt_tokens, 512u);
  EmbedRequest first;
  first.input_ids = {std::vector<int32_t>(row.begin(), row.begin() + 512)};
  EXPECT_LE(MaxAbsDiff(end.embeddings[0], Embed(m, first).embeddings[0]), 1e-5);
  req.options.truncate = Truncate::kStart;
  const EmbedResult start = Embed(m, req);
  EmbedRequest last;
  last.input_ids = {std::vector<int32_t>(row.end() - 512, row.end())};
  EXPECT_LE(MaxAbsDiff(start.embeddings[0], Embed(m, last).embeddings[0]), 1e-5);
  EXPECT_LT(Cosine(start.embeddings[0], end.embeddings[0]), 0.9999);

  // Texts keep [CLS] ... [SEP] around the kept part.
  const std::string long_text = Text(900);
  EmbedRequest t;
  t.texts = {long_text};
  const EmbedResult tr = Embed(m, t);
  EXPECT_EQ(tr.num_truncated, 1);
  EXPECT_EQ(tr.usage.prompt_tokens, 512u);
  std::vector<int32_t> ids = m->tokenizer()->Encode(long_text, true);
  ASSERT_GT(ids.size(), 512u);
  std::vector<int32_t> manual(ids.begin(), ids.begin() + 511);
  manual.push_back(ids.back());  // [SEP]
  EmbedRequest mr;
  mr.input_ids = {manual};
  EXPECT_LE(MaxAbsDiff(tr.embeddings[0], Embed(m, mr).embeddings[0]), 1e-5);
  t.options.truncate = Truncate::kError;
  EXPECT_THROW(Embed(m, t), Error);
}

TEST(EmbedInput, EmptyListEmptyStringAndInvalidUtf8AreClearErrorsAndTheModelStaysUsable) {
  auto m = ebb::LoadModel(Bert());
  auto expect_error = [&](EmbedRequest r, const std::string& needle) {
    try {
      Embed(m, r);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(needle));
    }
    EXPECT_EQ(EmbedTexts(m, {"still works"}).embeddings.size(), 1u);
  };
  expect_error(EmbedRequest{}, "nothing to embed");
  EmbedRequest empty_text;
  empty_text.texts = {"fine", ""};
  expect_error(empty_text, "texts[1] is empty");
  EmbedRequest bad;
  bad.texts = {"ok", "caf\xc3", "x"};
  expect_error(bad, "texts[1]");
  EmbedRequest both;
  both.texts = {"a"};
  both.input_ids = {{2, 3}};
  expect_error(both, "not both");
  EmbedRequest oov;
  oov.input_ids = {{2, 99999, 3}};
  expect_error(oov, "outside the vocabulary");
  EmbedRequest dims;
  dims.texts = {"a"};
  dims.options.dimensions = 65;
  expect_error(dims, "larger than the model's 64");
  EmbedRequest pooled;
  pooled.texts = {"a"};
  pooled.options.pooling = Pooling::kModel;
  expect_error(pooled, "no pooled output");
  EXPECT_EQ(m->num_live_generators(), 0);
}

TEST(EmbedOptions, DimensionsKeepsAPrefixAndRenormalises) {
  auto m = ebb::LoadModel(Bert());
  EmbedOptions raw;
  raw.normalize = false;
  const auto full = EmbedTexts(m, {Text(9)}, raw).embeddings[0];
  EmbedOptions o;
  o.dimensions = 16;
  const EmbedResult r = EmbedTexts(m, {Text(9)}, o);
  ASSERT_EQ(r.embeddings[0].size(), 16u);
  EXPECT_EQ(r.dimensions, 16);
  EXPECT_NEAR(Norm(r.embeddings[0]), 1.0, 1e-5);
  std::vector<float> prefix(full.begin(), full.begin() + 16);
  EXPECT_GE(Cosine(prefix, r.embeddings[0]), 0.999999);
}

TEST(EmbedOptions, RequestKeysGoThroughTheOptionTable) {
  EmbedRequest r;
  r.Set("embed.pooling", "cls");
  r.Set("embed.normalize", "false");
  r.Set("embed.truncate", "error");
  r.Set("embed.dimensions", "8");
  r.Set("embed.batch_size", "4");
  r.Set("embed.max_batch_tokens", "1024");
  r.Set("embed.max_padding", "1.5");
  EXPECT_EQ(r.options.pooling, Pooling::kCls);
  EXPECT_EQ(r.options.normalize, std::optional<bool>(false));
  EXPECT_EQ(r.options.truncate, Truncate::kError);
  EXPECT_EQ(r.options.dimensions, 8);
  EXPECT_EQ(r.options.batch_size, 4);
  EXPECT_EQ(r.options.max_batch_tokens, 1024);
  EXPECT_EQ(r.options.max_padding, 1.5);
  r.Set("embed.max_padding", "0");
  EXPECT_EQ(r.options.max_padding, 0);
  try {
    r.Set("embed.max_padding", "0.5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("use 0 for no limit or a ratio of 1 or more"));
  }
  r.Set("embed.pooling", "max");
  EXPECT_EQ(r.options.pooling, Pooling::kMax);
  r.Set("embed.pooling", "mean_sqrt_len");
  EXPECT_EQ(r.options.pooling, Pooling::kMeanSqrtLen);
  r.Set("embed.pooling", "weightedmean");
  EXPECT_EQ(r.options.pooling, Pooling::kWeightedMean);
  EXPECT_THROW(r.Set("embed.pooling", "maximum"), Error);
  EXPECT_THROW(r.Set("embed.batch_size", "0"), Error);
  try {
    r.Set("embed.poolng", "cls");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'embed.pooling'"));
  }
  try {
    r.Set("temperature", "0.5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("generation request option"));
  }
  GeneratorParams p;
  try {
    p.Set("embed.pooling", "cls");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("EmbedRequest"));
  }
}

// ---- Done-when 4/5: the same controls, observers and registry ----------------------------------

struct Counter : RequestObserver {
  std::atomic<int> starts{0}, ends{0};
  std::atomic<uint64_t> prompt{0}, generated{0};
  void OnRequestStart(const RequestStart&) override { ++starts; }
  void OnRequestEnd(const RequestEnd& e) override {
    ++ends;
    prompt += e.prompt_tokens;
    generated += e.generated_tokens;
  }
};

TEST(EmbedRuntime, EncoderAndDecoderAreBothListedAndEachRefusesTheOthersPath) {
  Runtime rt;
  auto obs = std::make_shared<Counter>();
  rt.AddObserver(obs);
  auto enc = rt.Load("embedder", Bert());
  auto dec = rt.Load("chat", Llama());
  const auto list = rt.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, "chat");
  EXPECT_FALSE(list[0].is_encoder);
  EXPECT_EQ(list[1].id, "embedder");
  EXPECT_TRUE(list[1].is_encoder);
  EXPECT_EQ(list[1].type, "bert");
  EXPECT_TRUE(enc->info().is_encoder);

  const EmbedResult r = EmbedTexts(enc, {"hello world", Text(30)});
  EXPECT_EQ(obs->starts, 1);
  EXPECT_EQ(obs->ends, 1);
  EXPECT_EQ(obs->generated, 0u);
  EXPECT_EQ(obs->prompt, r.usage.prompt_tokens);
  EXPECT_EQ(enc->runtime().Stats().num_requests, 1u);
  EXPECT_EQ(rt.List()[1].requests_served, 1u);
  EXPECT_EQ(enc->kv_stats().reserved_bytes, 0u);
  EXPECT_EQ(enc->kv_stats().num_allocations, 0u);

  try {
    Generator g(enc, GeneratorParams{});
    FAIL() << "a generator on an encoder must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("encoder"));
  }
  try {
    EmbedTexts(dec, {"hi"});
    FAIL() << "Embed on a decoder must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
  }
  EXPECT_EQ(obs->starts, 1) << "refused requests are not requests";
  rt.Unload("embedder");
  EXPECT_THROW(EmbedTexts(enc, {"after unload"}), Error);
}

TEST(EmbedRuntime, ShrinkNowAfterNextRequestAndEveryNWorkOnAnEncoder) {
  auto m = ebb::LoadModel(Bert());
  EmbedTexts(m, {Text(300)});
  const uint64_t before = m->runtime().Stats().num_shrinks;
  m->runtime().ShrinkArena();  // idle: a minimal encoder Run carries it
  EXPECT_EQ(m->runtime().Stats().num_shrinks, before + 1);
  EXPECT_EQ(m->runtime().Stats().num_requests, 1u) << "the minimal step is not a request";
  m->runtime().ShrinkAfterNextRun();
  EmbedTexts(m, {Text(5)});
  EXPECT_EQ(m->runtime().Stats().num_shrinks, before + 2);
  m->runtime().ShrinkEvery(3);
  for (int i = 0; i < 6; ++i) EmbedTexts(m, {Text(5 + i)});
  EXPECT_EQ(m->runtime().Stats().num_shrinks, before + 4);
  const ArenaStats a = m->runtime().Stats().cpu_arena;
  EXPECT_TRUE(a.available);
  EXPECT_GE(a.num_shrinkages, 1);
}

// EBB_EMBED_SOAK_CALLS calls (default 100; the soak label runs 1,000) of mixed lengths with
// memory.shrink_every=20: RSS right after each shrink stays flat.
TEST(EmbedSoak, MixedLengthCallsWithShrinkEveryTwentyStayFlat) {
  const char* n = std::getenv("EBB_EMBED_SOAK_CALLS");
  const int calls = n != nullptr ? std::atoi(n) : 100;
  ModelOptions o;
  o.Set("memory.shrink_every", "20");
  auto m = ebb::LoadModel(Bert(), o);
  std::vector<int64_t> after_shrink;
  uint64_t x = 99;
  for (int i = 0; i < calls; ++i) {
    std::vector<std::string> texts;
    for (int k = 0; k < 3; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      texts.push_back(Text(1 + static_cast<int>((x >> 33) % 420), i + k));
    }
    EmbedTexts(m, texts);
    if ((i + 1) % 20 == 0) after_shrink.push_back(ReadProcessMemory().rss_bytes);
  }
  const MemoryStats s = m->runtime().Stats();
  EXPECT_EQ(s.num_requests, static_cast<uint64_t>(calls));
  EXPECT_EQ(s.num_shrinks, static_cast<uint64_t>(calls / 20));
  EXPECT_EQ(s.kv.reserved_bytes, 0u);
  ASSERT_GE(after_shrink.size(), 3u);
  // The first shrink follows warm-up; from the second on, RSS after a shrink stays flat.
  const auto lo = *std::min_element(after_shrink.begin() + 1, after_shrink.end());
  const auto hi = *std::max_element(after_shrink.begin() + 1, after_shrink.end());
  std::printf("RSS after shrinks (KiB):");
  for (int64_t v : after_shrink) std::printf(" %lld", static_cast<long long>(v / 1024));
  std::printf("\n");
  EXPECT_LE(hi - lo, (calls >= 1000 ? 4 : 16) * kMiB);
}

// ---- Layout (a): a sentence-transformers / HF ONNX export -------------------------------------

// bert-tiny's files rearranged as an export: onnx/model.onnx, tokenizer.json, config.json,
// 1_Pooling/config.json (CLS), no genai_config.json.
fs::path MakeHfFolder(const std::string& name, bool with_pooling) {
  const fs::path dir =
      fs::temp_directory_path() / ("ebb-embed-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "onnx");
  fs::copy_file(Bert() / "model.onnx", dir / "onnx" / "model.onnx");
  // As in real exports, the tokenizer pads to a fixed 128 and truncates at 16; ebb must ignore
  // both (it pads per batch, with a mask, and truncates at the model's own limit).
  auto tok = ReadJson(Bert() / "tokenizer.json");
  tok["padding"] = {{"strategy", {{"Fixed", 128}}},
                    {"direction", "Right"},
                    {"pad_to_multiple_of", nullptr},
                    {"pad_id", 0},
                    {"pad_type_id", 0},
                    {"pad_token", "[PAD]"}};
  tok["truncation"] = {
      {"direction", "Right"}, {"max_length", 16}, {"strategy", "LongestFirst"}, {"stride", 0}};
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::ofstream(dir / "config.json")
      << R"({"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "max_position_embeddings": 512, "vocab_size": 1024,
             "pad_token_id": 0})";
  std::ofstream(dir / "sentence_bert_config.json") << R"({"max_seq_length": 128})";
  if (with_pooling) {
    fs::create_directories(dir / "1_Pooling");
    std::ofstream(dir / "1_Pooling" / "config.json")
        << R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": true,
               "pooling_mode_mean_tokens": false})";
  }
  return dir;
}

TEST(EmbedFolders, SentenceTransformersExportLoadsWithItsPoolingAndLength) {
  const fs::path dir = MakeHfFolder("st", true);
  auto hf = ebb::LoadModel(dir);
  auto genai = ebb::LoadModel(Bert());
  EXPECT_TRUE(hf->info().is_encoder);
  EXPECT_EQ(hf->info().context_length, 128) << "sentence_bert_config.json max_seq_length";
  const EmbedResult a = EmbedTexts(hf, {"the river ran low"});
  EXPECT_EQ(a.pooling, Pooling::kCls) << "from 1_Pooling/config.json";
  EmbedOptions cls;
  cls.pooling = Pooling::kCls;
  const EmbedResult b = EmbedTexts(genai, {"the river ran low"}, cls);
  EXPECT_LE(MaxAbsDiff(a.embeddings[0], b.embeddings[0]), 1e-6);
  EXPECT_EQ(a.usage.prompt_tokens, b.usage.prompt_tokens) << "no tokenizer.json padding";
  EXPECT_LT(a.usage.prompt_tokens, 16u);
  const EmbedResult long_text = EmbedTexts(hf, {Text(20)});
  EXPECT_GT(long_text.usage.prompt_tokens, 16u) << "no tokenizer.json truncation";
  EXPECT_EQ(long_text.num_truncated, 0);
  EmbedOptions mean;
  mean.pooling = Pooling::kMean;  // the option overrides the folder's pooling
  EXPECT_EQ(EmbedTexts(hf, {"the river"}, mean).pooling, Pooling::kMean);
  EXPECT_EQ(EmbedTexts(genai, {"the river"}).pooling, Pooling::kMean) << "no 1_Pooling: mean";
  fs::remove_all(dir);
}

TEST(EmbedFolders, AFolderThatFitsNeitherLayoutSaysWhatIsMissing) {
  const fs::path dir = MakeHfFolder("missing", false);
  fs::remove(dir / "tokenizer.json");
  fs::remove_all(dir / "onnx");
  try {
    ebb::LoadModel(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("genai_config.json"));
    EXPECT_THAT(e.what(), HasSubstr("model.onnx (or onnx/model.onnx"));
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("config.json,")));
  }
  fs::remove_all(dir);
}

TEST(EmbedFolders, MiniLmShapedSynthModelUsesItsPoolingConfig) {
  auto m = ebb::LoadModel(MiniLmShape());
  EXPECT_TRUE(m->info().is_encoder);
  EXPECT_EQ(m->info().vocab_size, 30522);
  const EmbedResult r = EmbedTexts(m, {"a sentence about rivers", "and one about memory"});
  EXPECT_EQ(r.pooling, Pooling::kMean);
  ASSERT_EQ(r.embeddings.size(), 2u);
  EXPECT_EQ(r.embeddings[0].size(), 384u);
  EXPECT_NEAR(Norm(r.embeddings[1]), 1.0, 1e-5);
}

// 1_Pooling/config.json with one of the other modes selects it under embed.pooling=auto; several
// modes at once (a concatenation in sentence-transformers) are refused naming the file and fix.
TEST(EmbedFolders, PoolingConfigSelectsMaxMeanSqrtLenAndWeightedMean) {
  const fs::path dir = MakeHfFolder("pool-modes", true);
  auto bert = ebb::LoadModel(Bert());
  for (const auto& [key, pooling] :
       {std::pair{"pooling_mode_max_tokens", Pooling::kMax},
        {"pooling_mode_mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
        {"pooling_mode_weightedmean_tokens", Pooling::kWeightedMean}}) {
    SCOPED_TRACE(key);
    nlohmann::json cfg = {{"word_embedding_dimension", 64},
                          {"pooling_mode_cls_token", false},
                          {"pooling_mode_mean_tokens", false},
                          {key, true}};
    std::ofstream(dir / "1_Pooling" / "config.json") << cfg.dump();
    auto hf = ebb::LoadModel(dir);
    const EmbedResult a = EmbedTexts(hf, {"the river ran low", Text(12)});
    EXPECT_EQ(a.pooling, pooling);
    EmbedOptions o;
    o.pooling = pooling;
    const EmbedResult b = EmbedTexts(bert, {"the river ran low", Text(12)}, o);
    EXPECT_LE(MaxAbsDiff(a.embeddings[1], b.embeddings[1]), 1e-6);
  }
  std::ofstream(dir / "1_Pooling" / "config.json")
      << R"({"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": true})";
  auto both = ebb::LoadModel(dir);
  try {
    EmbedTexts(both, {"the river"});
    FAIL() << "two pooling modes must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("1_Pooling/config.json"));
    EXPECT_THAT(e.what(), HasSubstr("several pooling modes"));
    EXPECT_THAT(e.what(), HasSubstr("set embed.pooling"));
  }
  EmbedOptions mean;
  mean.pooling = Pooling::kMean;
  EXPECT_EQ(EmbedTexts(both, {"the river"}, mean).pooling, Pooling::kMean) << "the override wins";
  fs::remove_all(dir);
}

// modules.json decides embed.normalize's default: a Normalize module normalises, a modules.json
// without one does not, no modules.json normalises; the option overrides either way.
TEST(EmbedFolders, ModulesJsonDecidesWhetherToNormaliseByDefault) {
  const fs::path dir = MakeHfFolder("modules", true);
  const std::string text = Text(7);
  EmbedOptions raw_opt;
  raw_opt.normalize = false;
  const auto raw = EmbedTexts(ebb::LoadModel(dir), {text}, raw_opt).embeddings[0];
  ASSERT_GT(std::fabs(Norm(raw) - 1.0), 1e-2) << "the raw vector must not be unit norm already";

  const EmbedResult none = EmbedTexts(ebb::LoadModel(dir), {text});
  EXPECT_TRUE(none.normalized) << "no modules.json: normalise";
  EXPECT_NEAR(Norm(none.embeddings[0]), 1.0, 1e-5);

  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  const auto no_norm = ebb::LoadModel(dir);
  const EmbedResult plain = EmbedTexts(no_norm, {text});
  EXPECT_FALSE(plain.normalized) << "modules.json without Normalize: raw vectors";
  EXPECT_LE(MaxAbsDiff(plain.embeddings[0], raw), 1e-6);
  EmbedOptions on;
  on.normalize = true;
  EXPECT_NEAR(Norm(EmbedTexts(no_norm, {text}, on).embeddings[0]), 1.0, 1e-5);

  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  const auto with_norm = ebb::LoadModel(dir);
  const EmbedResult normed = EmbedTexts(with_norm, {text});
  EXPECT_TRUE(normed.normalized);
  EXPECT_NEAR(Norm(normed.embeddings[0]), 1.0, 1e-5);
  EXPECT_LE(MaxAbsDiff(EmbedTexts(with_norm, {text}, raw_opt).embeddings[0], raw), 1e-6);
  fs::remove_all(dir);
}

// A real all-MiniLM-L6-v2 export, when a user puts one at ../shared/models/all-minilm-l6-v2.
TEST(EmbedFolders, RealAllMiniLmL6V2RanksRelatedSentencesCloser) {
  const fs::path dir = testing::SharedDir() / "models" / "all-minilm-l6-v2";
  EBB_SKIP_UNLESS_EXISTS(dir / "onnx" / "model.onnx");
  auto m = ebb::LoadModel(dir);
  const EmbedResult r = EmbedTexts(m, {"A man is eating food.", "A man is eating a piece of bread.",
                                       "The stock market fell sharply today."});
  ASSERT_EQ(r.embeddings.size(), 3u);
  for (const auto& v : r.embeddings) EXPECT_NEAR(Norm(v), 1.0, 1e-5);
  EXPECT_GT(Cosine(r.embeddings[0], r.embeddings[1]), Cosine(r.embeddings[0], r.embeddings[2]));
}

}  // namespace
// Issue 22 bugs 2 and 3: an embedding step refused by arena.max_mem names the cap and the fix,
// as a decoder step does (one RunError for both); and the load-time refusal of a cap below what
// the arena already holds names what holds it and the fixes that work: minilm's prepacked
// copies stay in the arena with use_device_allocator_for_initializers=1, and leave it with
// disable_prepacking=1 (or the model cache, which tests run without).
TEST(Embed, ArenaCapErrorsNameTheCapAndAFixThatWorks) {
  ModelOptions capped;
  capped.Set("session_options.arena.max_mem", "2MiB");
  auto m = ebb::LoadModel(Bert(), capped);
  EmbedRequest big;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "memory arena ";
  big.texts = {text};
  try {
    Embed(m, big);
    FAIL() << "a 400-token step fit under a 2 MiB arena cap";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("arena.max_mem=2097152"));
    EXPECT_THAT(e.what(), HasSubstr("lower embed.batch_size or embed.max_batch_tokens, or raise "
                                    "arena.max_mem"));
  }
  EmbedRequest small;
  small.texts = {"hi"};
  EXPECT_EQ(Embed(m, small).embeddings.size(), 1u) << "the model stays usable";
  m.reset();  // the arena options are process-wide: the next cap needs this model gone

  const fs::path minilm = testing::TestModelsDir() / "minilm-shape-fp32";
  ModelOptions o;
  o.Set("session_options.session.use_device_allocator_for_initializers", "1");
  o.Set("session_options.arena.max_mem", "4MiB");
  try {
    ebb::LoadModel(minilm, o);
    FAIL() << "minilm's prepacked weights fit under 4 MiB";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("prepacked copies"));
    EXPECT_THAT(e.what(), HasSubstr("session.disable_prepacking=1"));
    EXPECT_THAT(e.what(), Not(HasSubstr("use_device_allocator_for_initializers=1 for")))
        << "the key is already set: not suggested again";
  }
  o.Set("session_options.session.disable_prepacking", "1");
  auto ok = ebb::LoadModel(minilm, o);
  EXPECT_EQ(Embed(ok, small).embeddings.size(), 1u);
}

}  // namespace ebb
