// StepRunner (model/step_runner.h): the one Run() of decode, batched decode and embeddings. Its
// ORT-failure mapping by step kind, its run count, and the one test fault seam.
#include "model/step_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "generate/generator_testing.h"
#include "model/model_views.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

fs::path Gpt2() { return testing::TestModelsDir() / "gpt2-tiny-fp32"; }
fs::path Bert() { return testing::TestModelsDir() / "bert-tiny-fp32"; }

// Disarms the process-wide fault seam whatever the test did.
struct FaultGuard {
  ~FaultGuard() { internal::SetStepFaultForTesting(nullptr); }
};

// Runs one step that ORT refuses (only input_ids is fed: every other input is missing) and
// returns what the runner threw.
Error FailedStep(internal::RunView m, const internal::StepDesc& desc, int* started) {
  std::vector<int64_t> ids{1};
  const std::vector<int64_t> dims{1, 1};
  internal::StepBinding bind;
  const std::string& name = m.info().is_encoder ? m.encoder().input_ids : m.io().input_ids;
  bind.Input(name, Ort::Value::CreateTensor<int64_t>(m.cpu_memory(), ids.data(), ids.size(),
                                                     dims.data(), dims.size()));
  bind.Output(m.info().is_encoder ? m.encoder().last_hidden_state : m.io().logits,
              Ort::Value{nullptr});
  try {
    m.runner().Run(bind, desc, [started] { ++*started; });
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "a step with missing inputs ran";
  return Error(ErrorCode::Internal, "");
}

TEST(StepRunner, AnOrtFailureIsMappedOnceByStepKind) {
  auto model = ebb::LoadModel(Gpt2());
  internal::RunView m(*model);
  const uint64_t runs_before = m.runner().num_runs();
  int started = 0;

  internal::StepDesc decode;
  decode.kind = internal::StepKind::kDecode;
  decode.prefill_chunk = 16;
  const Error d = FailedStep(m, decode, &started);
  EXPECT_EQ(d.code(), ErrorCode::Internal);
  EXPECT_THAT(d.what(), StartsWith("ONNX Runtime Run failed on model.onnx: "));

  internal::StepDesc batched;
  batched.kind = internal::StepKind::kBatchedDecode;
  batched.sequences = 3;
  const Error b = FailedStep(m, batched, &started);
  EXPECT_EQ(b.code(), ErrorCode::Internal);
  EXPECT_THAT(b.what(), StartsWith("ONNX Runtime Run failed on model.onnx (batched decode step "
                                   "of 3 generators): "));

  // on_start ran for both (it comes before the Run); neither counts as a run.
  EXPECT_EQ(started, 2);
  EXPECT_EQ(m.runner().num_runs(), runs_before);

  // The shrink controller saw both steps end: the model still generates, and each of its Runs
  // is counted once.
  GeneratorParams p;
  p.max_length = 8;
  Generator g(model, p);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42});
  g.GenerateNextToken();
  g.GenerateNextToken();
  EXPECT_EQ(m.runner().num_runs() - runs_before, g.Stats().model_runs);
}

TEST(StepRunner, AnEncoderFailureNamesTheModelFile) {
  auto model = ebb::LoadModel(Bert());
  internal::RunView m(*model);
  internal::StepDesc encode;
  encode.kind = internal::StepKind::kEncode;
  int started = 0;
  const Error e = FailedStep(m, encode, &started);
  EXPECT_EQ(e.code(), ErrorCode::Internal);
  EXPECT_THAT(e.what(), StartsWith("ONNX Runtime Run failed on model.onnx: "));
  EmbedRequest r;
  r.texts = {"still usable"};
  EXPECT_EQ(Embed(model, r).embeddings.size(), 1u);
}

// The fault seam sees every step with its kind, before the step runs; a non-empty answer fails
// that step as Internal with that text, and nothing ran or was counted.
TEST(StepRunner, TheFaultSeamSeesEveryKindAndFailsBeforeTheRun) {
  FaultGuard guard;
  auto gpt2 = ebb::LoadModel(Gpt2());
  auto bert = ebb::LoadModel(Bert());
  std::mutex mu;
  std::vector<internal::StepKind> seen;
  bool fail = true;
  internal::SetStepFaultForTesting(
      [&](const Model&, const internal::StepDesc& step) -> std::string {
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(step.kind);
        return fail ? "planted step failure" : "";
      });
  internal::RunView g2(*gpt2);
  const uint64_t runs_before = g2.runner().num_runs();
  GeneratorParams p;
  p.max_length = 8;
  {
    Generator g(gpt2, p);
    try {
      g.AppendTokens(std::vector<int32_t>{5, 17, 42});
      FAIL() << "the planted failure did not fail the step";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Internal);
      EXPECT_STREQ(e.what(), "planted step failure");
    }
    EXPECT_EQ(g2.runner().num_runs(), runs_before);
    EXPECT_EQ(g.Stats().model_runs, 0u);
  }
  EmbedRequest r;
  r.texts = {"a text"};
  EXPECT_THROW(Embed(bert, r), Error);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen, (std::vector<internal::StepKind>{internal::StepKind::kDecode,
                                                     internal::StepKind::kEncode}));
    fail = false;
  }
  // An installed hook that answers "" changes nothing; disarmed, nothing is asked.
  Generator g(gpt2, p);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42});
  internal::SetStepFaultForTesting(nullptr);
  g.GenerateNextToken();
  EXPECT_EQ(Embed(bert, r).embeddings.size(), 1u);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen.size(), 3u);
}

// FailNthRunForTesting (generator_testing.h) rides on the same seam: it counts this thread's
// decode steps only.
TEST(StepRunner, FailNthRunCountsDecodeStepsOnly) {
  FaultGuard guard;
  auto gpt2 = ebb::LoadModel(Gpt2());
  auto bert = ebb::LoadModel(Bert());
  GeneratorParams p;
  p.max_length = 8;
  Generator g(gpt2, p);
  internal::FailNthRunForTesting(2);
  EmbedRequest r;
  r.texts = {"an embedding step is not counted"};
  EXPECT_EQ(Embed(bert, r).embeddings.size(), 1u);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42});  // decode step 1
  try {
    g.GenerateNextToken();  // from the prefill's logits: no Run
    g.GenerateNextToken();  // decode step 2: fails
    FAIL() << "the second decode step ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_THAT(e.what(), HasSubstr("injected Run() failure (FailNthRunForTesting)"));
  }
  g.GenerateNextToken();  // fired once: the retry runs
  EXPECT_EQ(g.sequence(0).size(), 5u);
}

}  // namespace
}  // namespace ebb
