// Issue 24 item 16: logit_bias, presence_penalty and frequency_penalty were accepted and changed
// nothing; logprobs were refused. The sampler now applies them (greedy too) and computes logprobs
// of the adjusted logits.
#include "generate/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ebb/error.h"
#include "ebb/generator.h"

namespace ebb {
namespace {

using internal::Sampler;
using internal::SamplerConfig;
using Tokens = std::vector<int32_t>;

std::vector<float> Logits() { return {1.0f, 5.0f, 3.0f, 4.5f, -2.0f, 0.0f}; }

int32_t Greedy(SamplerConfig c, std::vector<float> logits, std::vector<int32_t> history = {}) {
  Sampler s(c);
  return s.Sample(logits, history);
}

TEST(SamplerLogitBias, MinusHundredBansTheGreedyTokenAndPlusHundredForcesOne) {
  EXPECT_EQ(Greedy({}, Logits()), 1);
  SamplerConfig ban;
  ban.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Greedy(ban, Logits()), 3);  // the next best
  SamplerConfig force;
  force.logit_bias = {{4, 100.0f}};
  EXPECT_EQ(Greedy(force, Logits()), 4);
  // Sampling: a forced token wins every draw (exp(-100) is nothing against it).
  SamplerConfig sample = force;
  sample.do_sample = true;
  sample.temperature = 1.0f;
  Sampler s(sample);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> l = Logits();
    ASSERT_EQ(s.Sample(l, {}), 4);
  }
  // And a banned one never comes up.
  SamplerConfig banned = ban;
  banned.do_sample = true;
  Sampler sb(banned);
  for (int i = 0; i < 500; ++i) {
    std::vector<float> l = Logits();
    ASSERT_NE(sb.Sample(l, {}), 1);
  }
}

TEST(SamplerPenalties, OpenAiFormulaOverTheTokensItSampledNotThePrompt) {
  SamplerConfig c;
  c.presence_penalty = 0.5f;
  c.frequency_penalty = 0.25f;
  Sampler s(c);
  // The prompt holds token 1 three times: the penalties do not count it.
  const std::vector<int32_t> history = {1, 1, 1};
  std::vector<float> l = Logits();
  EXPECT_EQ(s.Sample(l, history), 1);
  EXPECT_FLOAT_EQ(l[1], 5.0f);
  // Sampled once: 5 - 0.25 * 1 - 0.5 = 4.25 < 4.5, so token 3 wins now.
  l = Logits();
  EXPECT_EQ(s.Sample(l, Tokens{1, 1, 1, 1}), 3);
  EXPECT_FLOAT_EQ(l[1], 4.25f);
  EXPECT_FLOAT_EQ(l[3], 4.5f);
  l = Logits();
  s.Sample(l, Tokens{1, 1, 1, 1, 3});
  EXPECT_FLOAT_EQ(l[1], 4.25f);  // 1 time
  EXPECT_FLOAT_EQ(l[3], 3.75f);  // 1 time
}

TEST(SamplerPenalties, FrequencyGrowsWithTheCountAndTruncateForgets) {
  SamplerConfig c;
  c.frequency_penalty = 1.0f;
  c.logit_bias = {{2, 10.0f}};  // token 2 always wins, so it is sampled again and again
  Sampler s(c);
  std::vector<int32_t> seq = {0};
  for (int i = 0; i < 4; ++i) {
    std::vector<float> l = Logits();
    const int32_t t = s.Sample(l, seq);
    ASSERT_EQ(t, 2) << i;
    EXPECT_FLOAT_EQ(l[2], 3.0f + 10.0f - static_cast<float>(i));
    seq.push_back(t);
  }
  // Forget the last two samples (positions 3 and 4): count 2 again.
  s.Truncate(3);
  std::vector<float> l = Logits();
  s.Sample(l, Tokens{0, 2, 2});
  EXPECT_FLOAT_EQ(l[2], 13.0f - 2.0f);
  // Negative penalties encourage repetition.
  SamplerConfig neg;
  neg.presence_penalty = -2.0f;
  Sampler sn(neg);
  l = Logits();
  EXPECT_EQ(sn.Sample(l, {}), 1);
  l = {1.0f, 5.0f, 6.5f};
  EXPECT_EQ(sn.Sample(l, Tokens{1}), 1);  // 5 + 2 = 7 > 6.5
}

TEST(SamplerLogprobs, LogSoftmaxOfTheAdjustedLogitsAndTheTopN) {
  SamplerConfig c;
  c.top_logprobs = 3;
  c.logit_bias = {{0, 4.5f}};  // 1 + 4.5 = 5.5: token 0 becomes the best
  Sampler s(c);
  std::vector<float> l = Logits();
  const int32_t t = s.Sample(l, {});
  ASSERT_EQ(t, 0);
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x));
  const TokenLogprobs& lp = s.last_logprobs();
  EXPECT_EQ(lp.id, 0);
  EXPECT_NEAR(lp.logprob, 5.5 - std::log(z), 1e-5);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].id, 0);
  EXPECT_EQ(lp.top[1].id, 1);
  EXPECT_EQ(lp.top[2].id, 3);
  EXPECT_NEAR(lp.top[1].logprob, 5.0 - std::log(z), 1e-5);
  EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
  // top_logprobs 0: the chosen token's logprob only.
  SamplerConfig only;
  only.top_logprobs = 0;
  Sampler so(only);
  l = Logits();
  so.Sample(l, {});
  EXPECT_TRUE(so.last_logprobs().top.empty());
  EXPECT_LT(so.last_logprobs().logprob, 0.0f);
}

TEST(GeneratorParamsSet, PenaltiesBiasAndLogprobsKeysWithTheirRanges) {
  GeneratorParams p;
  p.Set("presence_penalty", "0.5");
  p.Set("frequency_penalty", "-1.5");
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, -1.5f);
  EXPECT_THROW(p.Set("presence_penalty", "2.5"), Error);
  EXPECT_THROW(p.Set("frequency_penalty", "nan"), Error);
  p.Set("logit_bias", "5=-100, 7=2.5");
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(p.logit_bias.at(5), -100.0f);
  EXPECT_FLOAT_EQ(p.logit_bias.at(7), 2.5f);
  p.Set("logit_bias", R"({"9": 100, "11": -3})");  // replaces the map
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(p.logit_bias.at(9), 100.0f);
  p.Set("logit_bias", "");
  EXPECT_TRUE(p.logit_bias.empty());
  for (const char* bad :
       {"5=-101", "x=1", "-1=1", "5", R"({"a": 1})", R"({"5": "1"})", R"({"5": 200})", "[1]"}) {
    try {
      p.Set("logit_bias", bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("logit_bias"), std::string::npos) << e.what();
    }
  }
  p.Set("logprobs", "true");
  p.Set("top_logprobs", "20");
  EXPECT_TRUE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 20);
  EXPECT_THROW(p.Set("top_logprobs", "21"), Error);
}

}  // namespace
}  // namespace ebb
