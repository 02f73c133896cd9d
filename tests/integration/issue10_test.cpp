// Regression tests for the bugs of issue 10 that need a model: GQA padding, the chunked-prefill
// rollback on ping-pong buffers, and `ebb info`'s KV bytes per token.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "generate/generator_testing.h"
#include "model/model_info.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using Rows = std::vector<std::vector<int32_t>>;

Rows Greedy(const std::shared_ptr<Model>& model, const Rows& prompts, int32_t max_length,
            std::optional<int32_t> prefill_chunk = std::nullopt) {
  GeneratorParams p;
  p.max_length = max_length;
  p.batch_size = static_cast<int32_t>(prompts.size());
  p.prefill_chunk_size = prefill_chunk;
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

// A copy of stories260k with search.past_present_share_buffer set to `share`.
class StoriesCopy {
 public:
  StoriesCopy(const fs::path& src, bool share) {
    dir_ = fs::temp_directory_path() /
           ("ebb_stories_" + std::to_string(getpid()) + (share ? "_shared" : "_pingpong"));
    fs::remove_all(dir_);
    fs::copy(src, dir_, fs::copy_options::recursive);
    auto cfg = nlohmann::json::parse(std::ifstream(dir_ / "genai_config.json"));
    cfg["search"]["past_present_share_buffer"] = share;
    std::ofstream(dir_ / "genai_config.json") << cfg.dump(2);
  }
  ~StoriesCopy() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// Issue 10, bug 1: padding followed search.past_present_share_buffer, so a GQA model whose config
// says false was left-padded and GQA attended the pads of the shorter row.
TEST(GqaPaddingIssue10, EveryRowOfABatchMatchesItsBatchOfOneWithAndWithoutSharedBuffer) {
  const fs::path src = testing::SharedDir() / "models/stories260k";
  EBB_SKIP_UNLESS_EXISTS(src);
  const std::vector<int32_t> dog = {1, 403, 407, 261, 378, 432, 261, 400, 428};
  const std::vector<int32_t> once = {1, 403, 407, 261};
  // /work/shared/models/README.md: llama2.c's run.c greedy output for `dog`, max_length 30.
  const std::vector<int32_t> dog_expected = {1,   403, 407, 261, 378, 432, 261, 400, 428, 395,
                                             392, 412, 444, 286, 399, 344, 444, 429, 275, 266,
                                             426, 346, 286, 399, 344, 444, 429, 275, 266, 267};
  for (bool share : {false, true}) {
    StoriesCopy copy(src, share);
    for (KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
      const std::string what =
          std::string("share ") + (share ? "true" : "false") + ", " + std::string(KvModeName(mode));
      ModelOptions mo;
      mo.kv_mode = mode;
      mo.kv_chunk_tokens = 8;  // several growths in dynamic mode
      auto model = ebb::LoadModel(copy.dir(), mo);
      EXPECT_TRUE(model->info().uses_gqa) << what;
      EXPECT_EQ(model->info().past_present_share_buffer, share) << what;
      const auto alone_dog = Greedy(model, {dog}, 30)[0];
      const auto alone_once = Greedy(model, {once}, 30)[0];
      EXPECT_EQ(alone_dog, dog_expected) << what;
      // Chunked prefill (batch of one) through the same layout gives the same tokens.
      EXPECT_EQ(Greedy(model, {dog}, 30, 4)[0], dog_expected) << what << ", chunk 4";
      EXPECT_EQ(Greedy(model, {dog, once}, 30), (Rows{alone_dog, alone_once})) << what;
      EXPECT_EQ(Greedy(model, {once, dog}, 30), (Rows{alone_once, alone_dog})) << what;
    }
  }
}

TEST(GqaPaddingIssue10, SynthesizedModelsReportTheirAttentionOp) {
  EXPECT_TRUE(ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32")->info().uses_gqa);
  // Weights in model.onnx.data: the op walk reads only model.onnx.
  EXPECT_TRUE(ebb::LoadModel(testing::TestModelsDir() / "llama-int4-extdata")->info().uses_gqa);
  const auto gpt2 = ebb::LoadModel(testing::TestModelsDir() / "gpt2-tiny-fp32");
  EXPECT_FALSE(gpt2->info().uses_gqa);
  EXPECT_FALSE(gpt2->info().past_present_share_buffer);
}

// Issue 10, bug 3: on a ping-pong (GPT-2 style) cache, a multi-chunk prefill that failed after
// two chunks had overwritten the committed past, so the generator was not left unchanged.
TEST(PrefillRollbackIssue10, FailedChunkedAppendOnPingPongLeavesTheGeneratorUnchanged) {
  const std::vector<int32_t> first = {5, 17, 42, 99, 7};
  const std::vector<int32_t> second = {8, 9, 10, 11, 12, 13, 14};
  const std::vector<int32_t> third = {20, 21, 22};
  for (KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
    ModelOptions mo;
    mo.kv_mode = mode;
    mo.kv_chunk_tokens = 4;
    mo.prefill_chunk_size = 2;  // the failed call feeds 8 tokens: 4 chunks
    auto model = ebb::LoadModel(testing::TestModelsDir() / "gpt2-tiny-fp32", mo);
    ASSERT_FALSE(model->info().past_present_share_buffer);
    for (int fail_at : {2, 3, 4}) {
      const std::string what =
          std::string(KvModeName(mode)) + ", failing chunk " + std::to_string(fail_at);
      GeneratorParams p;
      p.max_length = 40;
      Generator a(model, p), b(model, p);
      for (Generator* g : {&a, &b}) {
        g->AppendTokens(first);
        g->GenerateNextToken();
        g->GenerateNextToken();
      }
      internal::FailNthRunForTesting(fail_at);
      EXPECT_THROW(a.AppendTokens(second), Error) << what;
      internal::FailNthRunForTesting(0);
      EXPECT_EQ(std::vector<int32_t>(a.sequence(0).begin(), a.sequence(0).end()),
                std::vector<int32_t>(b.sequence(0).begin(), b.sequence(0).end()))
          << what;
      // `a` continues exactly as `b`, which never saw the failed call.
      for (Generator* g : {&a, &b}) g->AppendTokens(third);
      for (int step = 0; step < 6; ++step) {
        const auto la = a.GetLogits(), lb = b.GetLogits();
        ASSERT_EQ(la.size(), lb.size());
        for (size_t i = 0; i < la.size(); ++i) {
          ASSERT_NEAR(la[i], lb[i], 1e-5) << what << ", step " << step << ", logit " << i;
        }
        a.GenerateNextToken();
        b.GenerateNextToken();
        ASSERT_EQ(a.GetNextTokens(), b.GetNextTokens()) << what << ", step " << step;
      }
    }
    EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  }
}

// Issue 10, bug 5: `ebb info` counted 4 bytes per KV element even for a float16 KV cache.
TEST(InfoKvBytesIssue10, Fp16KvCountsTwoBytesPerElement) {
  const auto f32 = internal::DescribeModel(testing::TestModelsDir() / "llama-tiny-fp32");
  const auto f16 = internal::DescribeModel(testing::TestModelsDir() / "llama-tiny-fp16io");
  const auto& c = f16.config;
  EXPECT_EQ(f16.kv_bytes_per_token,
            2ull * c.num_hidden_layers * c.num_key_value_heads * c.head_size * 2);
  EXPECT_EQ(f32.kv_bytes_per_token, 2 * f16.kv_bytes_per_token);
  // The same figure as the loaded model's.
  EXPECT_EQ(
      f16.kv_bytes_per_token,
      ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp16io")->info().kv_bytes_per_token);
  EXPECT_EQ(internal::ModelFolderInfoJson(f16)["kv_element_type"], "float16");
}

}  // namespace
}  // namespace ebb
