// Issue 24 item 16: logit_bias, presence_penalty and frequency_penalty were accepted and changed
// nothing. They now act on the logits before sampling, in greedy decoding too, the same in a
// solo generator and in the batched decode path; logprobs report log-softmax of those logits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using Tokens = std::vector<int32_t>;

const fs::path kLlama = testing::TestModelsDir() / "llama-tiny-fp32";
// Block 32: batched and solo runs of this one agree exactly (decode_batch_test.cpp).
const fs::path kBatchable = testing::TestModelsDir() / "llama-tiny-int4-b32";
const Tokens kPrompt = {5, 17, 42, 99, 7};

class OpenAiSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kLlama)) GTEST_SKIP() << kLlama << " is absent";
  }
};

// The tokens generated after `prompt` (greedy unless `base` samples) (EOS ignored: the tiny model's
// config has none that it samples in practice; max_length bounds the run).
Tokens Generated(const std::shared_ptr<Model>& model, const GeneratorParams& base,
                 const Tokens& prompt, int n_new) {
  GeneratorParams p = base;
  p.max_length = static_cast<int32_t>(prompt.size()) + n_new;
  Generator g(model, p);
  g.AppendTokens(prompt);
  Tokens out;
  while (!g.done()) {
    g.GenerateNextToken();
    out.push_back(g.GetNextTokens()[0]);
  }
  return out;
}

int MaxCount(const Tokens& t) {
  std::map<int32_t, int> c;
  int best = 0;
  for (int32_t x : t) best = std::max(best, ++c[x]);
  return best;
}

size_t Distinct(const Tokens& t) {
  std::vector<int32_t> s = t;
  std::sort(s.begin(), s.end());
  return static_cast<size_t>(std::unique(s.begin(), s.end()) - s.begin());
}

TEST_F(OpenAiSampling, LogitBiasMinus100ChangesTheGreedyFirstTokenAndPlus100ForcesOne) {
  auto model = ebb::LoadModel(kLlama);
  const Tokens plain = Generated(model, {}, kPrompt, 8);
  ASSERT_FALSE(plain.empty());
  GeneratorParams ban;
  ban.logit_bias[plain[0]] = -100;
  const Tokens banned = Generated(model, ban, kPrompt, 8);
  EXPECT_NE(banned[0], plain[0]);
  EXPECT_EQ(std::count(banned.begin(), banned.end(), plain[0]), 0);
  // +100 on a token the plain run never picks: every greedy step picks it.
  int32_t forced = 3;
  while (std::find(plain.begin(), plain.end(), forced) != plain.end()) ++forced;
  GeneratorParams force;
  force.logit_bias[forced] = 100;
  EXPECT_EQ(Generated(model, force, kPrompt, 8), Tokens(8, forced));
  // Sampling obeys it too.
  force.do_sample = true;
  force.temperature = 1.5f;
  force.seed = 7;
  EXPECT_EQ(Generated(model, force, kPrompt, 8), Tokens(8, forced));
}

TEST_F(OpenAiSampling, FrequencyAndPresencePenaltiesReduceGreedyRepetition) {
  // This synthesized model repeats in greedy decoding (token 236 nine times in 60 here; the
  // fp32 one hardly repeats): what the penalties fight.
  if (!fs::exists(kBatchable)) GTEST_SKIP() << kBatchable << " is absent";
  auto model = ebb::LoadModel(kBatchable);
  const Tokens plain = Generated(model, {}, kPrompt, 60);
  ASSERT_GE(MaxCount(plain), 6) << "the test model no longer repeats; pick a longer run";
  GeneratorParams freq;
  freq.frequency_penalty = 2;
  const Tokens f = Generated(model, freq, kPrompt, 60);
  EXPECT_LT(MaxCount(f), MaxCount(plain));
  EXPECT_GT(Distinct(f), Distinct(plain));
  GeneratorParams pres;
  pres.presence_penalty = 2;
  const Tokens p = Generated(model, pres, kPrompt, 60);
  EXPECT_GT(Distinct(p), Distinct(plain));
  // A negative penalty encourages repetition: fewer distinct tokens.
  GeneratorParams neg;
  neg.frequency_penalty = -2;
  EXPECT_LE(Distinct(Generated(model, neg, kPrompt, 60)), Distinct(plain));
  // The prompt's tokens are not counted (OpenAI counts the generated tokens): with the greedy
  // token repeated in the prompt, the first pick under the penalties is still the plain one.
  Tokens repeated = kPrompt;
  repeated.insert(repeated.end(), 6, plain[0]);
  GeneratorParams both;
  both.presence_penalty = 2;
  both.frequency_penalty = 2;
  EXPECT_EQ(Generated(model, both, repeated, 1), Generated(model, {}, repeated, 1));
}

TEST_F(OpenAiSampling, RewindForgetsThePenaltyCountsOfTheDroppedTokens) {
  auto model = ebb::LoadModel(kLlama);
  GeneratorParams p;
  p.frequency_penalty = 1.5f;
  p.presence_penalty = 0.5f;
  p.max_length = static_cast<int32_t>(kPrompt.size()) + 30;
  Generator g(model, p);
  g.AppendTokens(kPrompt);
  while (!g.done()) g.GenerateNextToken();
  const auto s = g.sequence(0);
  const Tokens first(s.begin(), s.end());
  g.RewindTo(kPrompt.size());
  while (!g.done()) g.GenerateNextToken();
  const auto s2 = g.sequence(0);
  EXPECT_EQ(Tokens(s2.begin(), s2.end()), first);
}

TEST_F(OpenAiSampling, AnOutOfVocabularyBiasIsRefusedNamingTheIdAndTheVocabSize) {
  auto model = ebb::LoadModel(kLlama);
  const int32_t vocab = model->info().vocab_size;
  GeneratorParams p;
  p.logit_bias[vocab] = -100;
  try {
    Generator g(model, p);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    const std::string m = e.what();
    EXPECT_NE(m.find("logit_bias"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(vocab)), std::string::npos) << m;
  }
  GeneratorParams bad;
  bad.presence_penalty = std::nanf("");
  EXPECT_THROW(Generator(model, bad), Error);
  bad = {};
  bad.logit_bias[1] = 150;
  EXPECT_THROW(Generator(model, bad), Error);
}

TEST_F(OpenAiSampling, LogprobsAreTheLogSoftmaxOfTheAdjustedLogits) {
  auto model = ebb::LoadModel(kLlama);
  GeneratorParams p;
  p.max_length = static_cast<int32_t>(kPrompt.size()) + 6;
  p.top_logprobs = 5;  // turns logprobs on
  p.logit_bias[11] = 3;
  Generator g(model, p);
  g.AppendTokens(kPrompt);
  g.GenerateNextToken();
  // GetLogits are the model's raw logits: apply the bias by hand, then log-softmax.
  std::vector<float> l(g.GetLogits().begin(), g.GetLogits().end());
  l[11] += 3;
  double z = 0;
  const float mx = *std::max_element(l.begin(), l.end());
  for (float x : l) z += std::exp(static_cast<double>(x) - mx);
  const double log_z = mx + std::log(z);
  const std::vector<TokenLogprobs> lp = g.GetNextLogprobs();
  ASSERT_EQ(lp.size(), 1u);
  const int32_t t = g.GetNextTokens()[0];
  EXPECT_EQ(lp[0].id, t);
  EXPECT_NEAR(lp[0].logprob, l[t] - log_z, 1e-4);
  ASSERT_EQ(lp[0].top.size(), 5u);
  EXPECT_EQ(lp[0].top[0].id, t);  // greedy: the chosen token is the most likely
  for (size_t i = 1; i < lp[0].top.size(); ++i) {
    EXPECT_LE(lp[0].top[i].logprob, lp[0].top[i - 1].logprob);
    EXPECT_NEAR(lp[0].top[i].logprob, l[lp[0].top[i].id] - log_z, 1e-4);
  }
  // Without logprobs: none.
  Generator plain(model, GeneratorParams{});
  plain.AppendTokens(kPrompt);
  plain.GenerateNextToken();
  EXPECT_TRUE(plain.GetNextLogprobs().empty());
}

TEST_F(OpenAiSampling, GenerateReturnsOneLogprobEntryPerGeneratedTokenAndCallsOnToken) {
  auto model = ebb::LoadModel(kLlama);
  GenerateRequest req;
  req.input_ids = {kPrompt};
  req.params.max_length = 20;
  req.params.logprobs = true;
  std::vector<int32_t> seen;
  int with_logprobs = 0;
  const GenerateResult r =
      Generate(model, req, {}, [&](size_t row, int32_t id, const TokenLogprobs* lp) {
        EXPECT_EQ(row, 0u);
        seen.push_back(id);
        if (lp != nullptr && lp->id == id) ++with_logprobs;
      });
  const GenerateRow& row = r.rows.at(0);
  ASSERT_EQ(row.logprobs.size(), row.generated_ids.size());
  EXPECT_EQ(seen, row.generated_ids);
  EXPECT_EQ(with_logprobs, static_cast<int>(seen.size()));
  for (size_t i = 0; i < row.logprobs.size(); ++i) {
    EXPECT_EQ(row.logprobs[i].id, row.generated_ids[i]);
    EXPECT_LE(row.logprobs[i].logprob, 0.0f);
    EXPECT_TRUE(row.logprobs[i].top.empty());
  }
  // Not asked for: empty, and on_token gets null.
  req.params.logprobs = false;
  const GenerateResult r2 = Generate(
      model, req, {}, [&](size_t, int32_t, const TokenLogprobs* lp) { EXPECT_EQ(lp, nullptr); });
  EXPECT_TRUE(r2.rows.at(0).logprobs.empty());
  EXPECT_EQ(r2.rows.at(0).generated_ids, row.generated_ids);
}

// The batched decode path (decode_batch.max_rows) samples with the same per-request sampler:
// three concurrent requests with penalties and biases get the tokens of their solo runs.
TEST_F(OpenAiSampling, BatchedDecodeGivesTheSoloRunsTokensWithPenaltiesAndBias) {
  if (!fs::exists(kBatchable)) GTEST_SKIP() << kBatchable << " is absent";
  const int kNew = 40;
  std::vector<GeneratorParams> params(3);
  params[0].frequency_penalty = 2;
  params[1].presence_penalty = 1.5f;
  params[1].logit_bias[9] = 4;
  params[2].frequency_penalty = 0.7f;
  params[2].presence_penalty = -0.5f;
  params[2].logit_bias[5] = -100;
  params[2].top_logprobs = 3;
  const std::vector<Tokens> prompts = {{5, 17, 42}, {8, 9, 10, 11, 12, 13}, {300, 4, 2, 77}};
  std::vector<Tokens> solo;
  std::vector<Tokens> plain;
  {
    auto m = ebb::LoadModel(kBatchable);
    for (size_t k = 0; k < prompts.size(); ++k) {
      solo.push_back(Generated(m, params[k], prompts[k], kNew));
      plain.push_back(Generated(m, {}, prompts[k], kNew));
    }
  }
  // The settings change the tokens, so the comparison below means something.
  EXPECT_NE(solo[0], plain[0]);
  EXPECT_NE(solo[1], plain[1]);
  ModelOptions mo;
  mo.Set("decode_batch.max_rows", "4");
  mo.Set("decode_batch.policy", "gather");
  mo.Set("decode_batch.max_wait_us", "1000000");  // members wait for each other: real batches
  auto model = ebb::LoadModel(kBatchable, mo);
  std::vector<Tokens> got(prompts.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < prompts.size(); ++k) {
    threads.emplace_back([&, k] { got[k] = Generated(model, params[k], prompts[k], kNew); });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < prompts.size(); ++k) EXPECT_EQ(got[k], solo[k]) << "request " << k;
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

// The CLI flags: ebb generate --logit-bias/--frequency-penalty/--top-logprobs (--json shows the
// logprobs), ebb run --local --logit-bias; bad values exit 1 naming the key.
TEST_F(OpenAiSampling, CliFlagsSetTheSameKeys) {
  const std::string dir = kLlama.string();
  auto r = testing::RunCli("generate " + dir +
                           " --input-ids 5,17,42 --max-new-tokens 3 --logit-bias 500=100 "
                           "--frequency-penalty 0.5 --presence-penalty 0.1 --top-logprobs 2 "
                           "--json 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"sequences\":[[5,17,42,500,500,500]]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"logprobs\":[[{\"id\":500,"), std::string::npos) << r.out;
  r = testing::RunCli("run " + dir + " hello --local --max-tokens 3 --logit-bias 500=100");
  ASSERT_EQ(r.status, 0) << r.out;
  auto model = ebb::LoadModel(kLlama);
  const int32_t id = 500;
  const std::string piece = model->tokenizer()->Decode(std::span<const int32_t>(&id, 1));
  EXPECT_NE(r.out.find(piece + piece + piece), std::string::npos) << r.out;
  r = testing::RunCli("run " + dir + " hello --local --max-tokens 3 --logit-bias 500=200");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("logit_bias: the bias of token 500 is 200, out of range: need -100 to 100"),
            std::string::npos)
      << r.out;
  r = testing::RunCli("generate " + dir + " --input-ids 5 --max-new-tokens 3 --logit-bias 5000=1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("token id 5000 is outside the vocabulary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocab_size 1024"), std::string::npos) << r.out;
  r = testing::RunCli("generate " + dir + " --input-ids 5 --presence-penalty 2.5");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("presence_penalty"), std::string::npos) << r.out;
}

// A real tiny Llama (../shared/models/stories260k), when present: -100 on the greedy first token
// changes the text; a frequency penalty makes the story less repetitive.
TEST(OpenAiSamplingStories260k, BiasAndPenaltyChangeARealModelsGreedyText) {
  const fs::path dir = testing::SharedDir() / "models" / "stories260k";
  EBB_SKIP_UNLESS_EXISTS(dir / "genai_config.json");
  auto model = ebb::LoadModel(dir);
  GenerateRequest req;
  req.prompt = "Once upon a time";
  req.params.max_length = 80;
  const GenerateResult plain = Generate(model, req);
  ASSERT_FALSE(plain.rows[0].generated_ids.empty());
  GenerateRequest ban = req;
  ban.params.logit_bias[plain.rows[0].generated_ids[0]] = -100;
  const GenerateResult banned = Generate(model, ban);
  EXPECT_NE(banned.rows[0].generated_ids[0], plain.rows[0].generated_ids[0]);
  EXPECT_NE(banned.rows[0].text, plain.rows[0].text);
  GenerateRequest pen = req;
  pen.params.frequency_penalty = 1;
  const GenerateResult penalized = Generate(model, pen);
  EXPECT_GE(Distinct(penalized.rows[0].generated_ids), Distinct(plain.rows[0].generated_ids));
}

}  // namespace
// Issue 38: the generator checked the struct's fields with ranges of its own ("temperature >= 0",
// "repetition_penalty > 0"), wider than the option table's, so a C++ caller filling the struct got
// values Set() refuses. Both now take the table's ranges.
TEST(SamplingRanges, TheStructAndSetRefuseTheSameValues) {
  auto model = ebb::LoadModel(kLlama);
  struct Case {
    const char* key;
    const char* text;
    void (*fill)(GeneratorParams&);
  };
  const Case cases[] = {
      {"temperature", "150", [](GeneratorParams& p) { p.temperature = 150; }},
      {"repetition_penalty", "0.001", [](GeneratorParams& p) { p.repetition_penalty = 0.001f; }},
      {"top_p", "1.5", [](GeneratorParams& p) { p.top_p = 1.5f; }},
      {"top_k", "-1", [](GeneratorParams& p) { p.top_k = -1; }},
      {"presence_penalty", "3", [](GeneratorParams& p) { p.presence_penalty = 3; }},
      {"top_logprobs", "21", [](GeneratorParams& p) { p.top_logprobs = 21; }},
      {"batch_size", "0", [](GeneratorParams& p) { p.batch_size = 0; }},
  };
  for (const Case& c : cases) {
    GeneratorParams via_set;
    EXPECT_THROW(via_set.Set(c.key, c.text), Error) << c.key;
    GeneratorParams via_struct;
    c.fill(via_struct);
    try {
      Generator g(model, via_struct);
      ADD_FAILURE() << c.key << "=" << c.text << " was accepted from the struct";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << c.key;
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(std::string(c.key) + "="))
          << e.what();
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("out of range")) << e.what();
    }
  }
  // logit_bias's bias range is one check too (generate/generator_params.h): the same message from
  // the struct, from Set's ID=BIAS form and from its JSON form (which the SDKs send).
  const std::string want = "logit_bias: the bias of token 7 is 101, out of range: need -100 to 100";
  for (const char* text : {"7=101", "{\"7\": 101}"}) {
    GeneratorParams via_set;
    try {
      via_set.Set("logit_bias", text);
      ADD_FAILURE() << text << " was accepted by Set";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), want) << text;
    }
  }
  GeneratorParams biased;
  biased.logit_bias[7] = 101;
  try {
    Generator g(model, biased);
    ADD_FAILURE() << "a bias of 101 was accepted from the struct";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), want);
  }
  // The table's edges are accepted from both.
  GeneratorParams edge;
  edge.temperature = 100;
  edge.repetition_penalty = 0.01f;
  EXPECT_NO_THROW(Generator g(model, edge));
}

}  // namespace ebb
