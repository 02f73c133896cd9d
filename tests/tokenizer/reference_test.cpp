// Every family against the reference library's answers (tools/tokref/gen.js output):
// encode with and without special tokens, decode with and without skipping special tokens,
// decode of random/partial id sequences, and streaming decode == decode.
#include <algorithm>
#include <map>

#include "tokenizer_test_util.h"

namespace ebb::testing {
namespace {

std::string Show(const std::string& s) {
  nlohmann::json j = s;
  return j.dump();
}

std::string StreamAll(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder sd(t, skip);
  std::string out;
  for (int32_t id : ids) out += sd.Put(id);
  out += sd.Flush();
  return out;
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto expected_path = TokenizerDataDir() / (GetParam() + ".expected.json");
    ASSERT_TRUE(std::filesystem::exists(expected_path)) << expected_path;
    expected_ = nlohmann::json::parse(ReadText(expected_path));
    tokenizer_path_ = ResolveTokenizerSpec(expected_["tokenizer"].get<std::string>());
  }
  nlohmann::json expected_;
  std::filesystem::path tokenizer_path_;
};

TEST_P(ReferenceTest, EncodeMatchesReference) {
  EBB_SKIP_UNLESS_EXISTS(tokenizer_path_);
  const Tokenizer& t = CachedTokenizer(tokenizer_path_);
  const size_t n_added = t.Encode("", true).size();
  size_t checked = 0, failures = 0;
  for (const auto& c : expected_["encode"]) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto got = t.Encode(text, true);
    ++checked;
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << "encode " << Show(text) << "\n  want " << nlohmann::json(want).dump()
                    << "\n  got  " << nlohmann::json(got).dump();
    }
    const auto plain = t.Encode(text, false);
    if (c.contains("plain")) {
      if (plain != c["plain"].get<std::vector<int32_t>>() && ++failures <= 10) {
        ADD_FAILURE() << "encode (no special) " << Show(text);
      }
    } else if ((plain.size() + n_added != want.size() ||
                std::search(want.begin(), want.end(), plain.begin(), plain.end()) == want.end()) &&
               ++failures <= 10) {
      ADD_FAILURE() << "encode (no special) is not the ids without the post-processor's "
                    << Show(text);
    }
  }
  EXPECT_EQ(failures, 0u) << "of " << checked;
  EXPECT_GE(checked, 200u);
}

TEST_P(ReferenceTest, DecodeMatchesReference) {
  EBB_SKIP_UNLESS_EXISTS(tokenizer_path_);
  const Tokenizer& t = CachedTokenizer(tokenizer_path_);
  size_t failures = 0;
  for (const auto& c : expected_["encode"]) {
    const std::string text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string want = c.value("decoded", text);
    const std::string want_skip = c.value("decoded_skip", text);
    const std::string got = t.Decode(ids, false);
    const std::string got_skip = t.Decode(ids, true);
    if (got != want && ++failures <= 10) {
      ADD_FAILURE() << "decode of " << Show(text) << "\n  want " << Show(want) << "\n  got  "
                    << Show(got);
    }
    if (got_skip != want_skip && ++failures <= 10) {
      ADD_FAILURE() << "decode(skip) of " << Show(text) << "\n  want " << Show(want_skip)
                    << "\n  got  " << Show(got_skip);
    }
  }
  for (const auto& c : expected_["decode"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string got = t.Decode(ids, false);
    const std::string got_skip = t.Decode(ids, true);
    if (got != c["text"].get<std::string>() && ++failures <= 10) {
      ADD_FAILURE() << "decode " << nlohmann::json(ids).dump() << "\n  want "
                    << Show(c["text"].get<std::string>()) << "\n  got  " << Show(got);
    }
    if (got_skip != c["text_skip"].get<std::string>() && ++failures <= 10) {
      ADD_FAILURE() << "decode(skip) " << nlohmann::json(ids).dump() << "\n  want "
                    << Show(c["text_skip"].get<std::string>()) << "\n  got  " << Show(got_skip);
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST_P(ReferenceTest, StreamingConcatEqualsDecode) {
  EBB_SKIP_UNLESS_EXISTS(tokenizer_path_);
  const Tokenizer& t = CachedTokenizer(tokenizer_path_);
  size_t failures = 0;
  auto check = [&](const std::vector<int32_t>& ids) {
    for (bool skip : {false, true}) {
      const std::string want = t.Decode(ids, skip);
      const std::string got = StreamAll(t, ids, skip);
      if (got != want && ++failures <= 10) {
        ADD_FAILURE() << "stream " << nlohmann::json(ids).dump() << " skip=" << skip << "\n  want "
                      << Show(want) << "\n  got  " << Show(got);
      }
    }
  };
  for (const auto& c : expected_["encode"]) check(c["ids"].get<std::vector<int32_t>>());
  for (const auto& c : expected_["decode"]) check(c["ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Families, ReferenceTest,
                         ::testing::Values("gpt2", "phi3", "whisper", "llama3", "qwen2", "roberta",
                                           "mistral", "bert", "clip", "misc"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace ebb::testing
