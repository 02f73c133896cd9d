// Issue 12: `ebb embed` prints vectors in input order, or an OpenAI-like JSON document; refused
// inputs and generating on an encoder fail with clear messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ebb/embedding.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;

std::filesystem::path Bert() { return testing::TestModelsDir() / "bert-tiny-fp32"; }

TEST(EmbedCli, PrintsAnOpenAiLikeJsonDocumentInInputOrder) {
  const auto r = testing::RunCli("embed " + Bert().string() +
                                 " --text 'the river' --text 'memory tokens and bread' --json "
                                 "--option embed.dimensions=8");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][0]["embedding"].size(), 8u);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 4);
  auto m = ebb::LoadModel(Bert());
  EmbedRequest req;
  req.texts = {"the river", "memory tokens and bread"};
  req.options.dimensions = 8;
  const auto want = Embed(m, req).embeddings[1];
  const auto got = j["data"][1]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
  const auto plain = testing::RunCli("embed " + Bert().string() + " --text 'a' --text 'b c'");
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), 2) << plain.out;
  const auto bad = testing::RunCli("embed " + Bert().string() + " --text ''");
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.out, HasSubstr("texts[0] is empty"));
  const auto gen = testing::RunCli("generate " + Bert().string() + " --prompt hi");
  EXPECT_NE(gen.status, 0);
  EXPECT_THAT(gen.out, HasSubstr("encoder"));
}

}  // namespace
}  // namespace ebb
