// Known answers on the real tokenizers in ../shared, loading paths, accessors and errors.
#include "ebb/error.h"
#include "tokenizer_test_util.h"

namespace ebb::testing {
namespace {

using Ids = std::vector<int32_t>;

TEST(TokenizerKnownAnswers, Gpt2) {
  EBB_SKIP_UNLESS_EXISTS(Gpt2Path());
  const Tokenizer& t = CachedTokenizer(Gpt2Path());
  EXPECT_EQ(t.Encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(t.Encode(" Hello"), (Ids{18435}));
  EXPECT_EQ(t.Encode("This is a test."), (Ids{1212, 318, 257, 1332, 13}));
  EXPECT_EQ(t.Encode("Hello  world"), (Ids{15496, 50286, 6894}));  // CodeGen's space tokens
  EXPECT_EQ(t.Decode(Ids{15496, 50286, 6894}), "Hello  world");
  EXPECT_EQ(t.Encode("<|endoftext|>"), (Ids{50256}));
  EXPECT_EQ(t.Decode(Ids{15496, 50256}, /*skip_special_tokens=*/true), "Hello");
  EXPECT_EQ(t.vocab_size(), 50295u);
  EXPECT_EQ(t.TokenToId("Hello"), 15496);
  EXPECT_EQ(t.TokenToId("no-such-token"), -1);
  EXPECT_EQ(t.IdToToken(995), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ(t.IdToToken(1 << 30), "");
  EXPECT_TRUE(t.IsSpecial(50256));
  EXPECT_FALSE(t.IsSpecial(50286));
  EXPECT_FALSE(t.IsSpecial(995));
}

TEST(TokenizerKnownAnswers, Gpt2FolderLoadsConfig) {
  EBB_SKIP_UNLESS_EXISTS(Gpt2Path());
  auto t = Tokenizer::FromFile(Gpt2Path().parent_path());
  EXPECT_EQ(t->bos_id(), 50256);
  EXPECT_EQ(t->eos_id(), 50256);
  EXPECT_EQ(t->Encode("Hello world"), (Ids{15496, 995}));
}

TEST(TokenizerKnownAnswers, Phi3) {
  EBB_SKIP_UNLESS_EXISTS(Phi3Dir());
  const Tokenizer& t = CachedTokenizer(Phi3Dir());
  // The post-processor adds <s>; "<s>" typed in the text is the special token too.
  EXPECT_EQ(t.Encode("<s>Hello</s>"), (Ids{1, 1, 15043, 2}));
  EXPECT_EQ(t.Encode("<s>Hello</s>", false), (Ids{1, 15043, 2}));
  EXPECT_EQ(t.Decode(Ids{1, 15043, 2}), "<s> Hello</s>");
  EXPECT_EQ(t.Decode(Ids{1, 15043, 2}, true), "Hello</s>");  // </s> is not special in phi3
  EXPECT_EQ(t.Encode("Hello world"), (Ids{1, 15043, 3186}));
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 32000);
  EXPECT_FALSE(t.chat_template().empty());
  // Byte fallback: a character outside the vocabulary becomes its UTF-8 bytes.
  const Ids emoji = t.Encode("\xF0\x9F\xA6\x99", false);  // U+1F999
  EXPECT_EQ(t.Decode(emoji), "\xF0\x9F\xA6\x99");
}

TEST(TokenizerKnownAnswers, Whisper) {
  EBB_SKIP_UNLESS_EXISTS(WhisperDir());
  const Tokenizer& t = CachedTokenizer(WhisperDir());
  EXPECT_EQ(t.Encode("Hello world"), (Ids{50258, 50363, 15947, 1002, 50257}));
  EXPECT_EQ(t.Encode("<|en|>Hi", false), (Ids{50259, 17155}));
  EXPECT_EQ(t.Decode(t.Encode("Hello world"), true), "Hello world");
}

TEST(TokenizerErrors, UnsupportedConstructNamesJsonPath) {
  const std::string json = R"({
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "WhitespaceSplit"}, {"type": "UnicodeScripts"}]}})";
  try {
    Tokenizer::FromJson(json, "tokenizer.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_STREQ(e.what(),
                 "tokenizer.json: /pre_tokenizer/pretokenizers/1/type: unsupported pre-tokenizer "
                 "\"UnicodeScripts\"");
  }
}

TEST(TokenizerErrors, MalformedFiles) {
  auto expect_invalid = [](const std::string& json, const std::string& fragment) {
    try {
      Tokenizer::FromJson(json, "t.json");
      ADD_FAILURE() << "expected an error for " << json;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_invalid("{", "t.json: invalid JSON");
  expect_invalid("{}", "t.json: /model: missing required field");
  expect_invalid(R"({"model": {"type": "Unigram", "vocab": []}})",
                 "/model/type: unsupported model \"Unigram\"");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",
                 "/model/merges: merge 0: token \"b\" is not in the vocabulary");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}})",
                 "/model/dropout: BPE dropout is not supported");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                     "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""}})",
                 "/normalizer/type: unsupported normalizer \"Precompiled\"");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                     "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("},
                                       "behavior": "Isolated"}})",
                 "/pre_tokenizer/pattern/Regex: invalid regex");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                     "decoder": {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "X"}]}})",
                 "/decoder/decoders/1/type: unsupported decoder \"X\"");
  expect_invalid(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                     "post_processor": {"type": "TemplateProcessing", "single": [
                       {"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}}})",
                 "/post_processor/single/0/SpecialToken/id: special token \"<s>\" is missing");
}

TEST(TokenizerErrors, FileNotFound) {
  try {
    Tokenizer::FromFile("/nonexistent/dir/tokenizer.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

TEST(TokenizerErrors, InvalidUtf8AndUnknownIds) {
  auto t = Tokenizer::FromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1},
                                   "merges": []}})");
  EXPECT_EQ(t->Encode("ab"), (Ids{0, 1}));
  try {
    t->Encode(std::string("a\xC3", 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("offset 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t->Encode("\xED\xA0\x80"), Error);  // an encoded surrogate
  EXPECT_THROW(t->Encode("\xC0\x80"), Error);      // overlong NUL
  EXPECT_THROW(t->Decode(Ids{0, 7}), Error);
  EXPECT_THROW(t->Decode(Ids{-1}), Error);
  StreamDecoder sd(*t);
  EXPECT_EQ(sd.Put(0), "a");
  EXPECT_THROW(sd.Put(99), Error);
  EXPECT_EQ(sd.Put(1), " b");  // unchanged by the failed Put (no decoder: joined by " ")
}

}  // namespace
}  // namespace ebb::testing
