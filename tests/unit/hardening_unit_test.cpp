// Regression tests for issue 16 (hardening) that need no model: bounds, recursion limits,
// files that are not files, and messages. Each test is named after the bug it pins. The binary
// runs under a ctest TIMEOUT (tests/unit/CMakeLists.txt): before the fixes several of these
// crashed, spun or allocated without bound.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/files.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/options.h"
#include "ebb/tokenizer.h"
#include "model/genai_config.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kConfig = R"({
  "model": {
    "type": "llama", "vocab_size": 512, "context_length": 256,
    "bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": 0,
    "decoder": {"filename": "model.onnx", "head_size": 16, "hidden_size": 64,
                "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2}
  },
  "search": {"max_length": 128}
})";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return pos == std::string::npos ? s : s.replace(pos, from.size(), to);
}

// The message of the ebb::Error that `f` throws (and its code in *code).
template <typename F>
std::string ErrorOf(F&& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "expected an ebb::Error";
  return "";
}

std::string ConfigError(const std::string& text) {
  return ErrorOf([&] { internal::ParseGenaiConfig(text, "/m/genai_config.json"); });
}

std::string Nested(int depth, const std::string& open, const std::string& close,
                   const std::string& inner) {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + inner.size());
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ebb-hardening-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// ---- item 2: bounds on sizes and counts --------------------------------------------------------

TEST(Issue16Bounds, KvChunkTokensIntMaxIsRefusedWithItsLimit) {
  ModelOptions o;
  const std::string msg = ErrorOf([&] { o.Set("kv_cache.chunk_tokens", "2147483647"); });
  EXPECT_THAT(msg, HasSubstr("kv_cache.chunk_tokens"));
  EXPECT_THAT(msg, HasSubstr("1048576"));
  o.Set("kv_cache.chunk_tokens", "1048576");
  EXPECT_EQ(o.kv_chunk_tokens, 1 << 20);
}

TEST(Issue16Bounds, TokenizerVocabIdIntMaxIsRefused) {
  const std::string msg = ErrorOf([] {
    Tokenizer::FromJson(
        R"({"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 2147483647}, "unk_token": "a"}})");
  });
  EXPECT_THAT(msg, HasSubstr("/model/vocab/b"));
  EXPECT_THAT(msg, HasSubstr("16777215"));
}

TEST(Issue16Bounds, PaddingFixedIntMaxIsRefused) {
  ErrorCode code = ErrorCode::Internal;
  const std::string msg = ErrorOf(
      [] {
        Tokenizer::FromJson(R"({"model": {"type": "WordLevel", "vocab": {"a": 0},
                                "unk_token": "a"},
                                "padding": {"strategy": {"Fixed": 2147483647}}})")
            ->Encode("a", false);
      },
      &code);
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("/padding/strategy/Fixed"));
  EXPECT_THAT(msg, HasSubstr("1048576"));
}

TEST(Issue16Bounds, TemplateRangeNearInt64MaxDoesNotWrapAround) {
  // i += step wrapped past INT64_MAX and looped until std::bad_alloc.
  auto t = ChatTemplate::Parse(
      "{% for i in range(9223372036854775800, 9223372036854775807, 5) %}{{ i }},{% endfor %}");
  EXPECT_EQ(t->Render({}, false), "9223372036854775800,9223372036854775805,");
  auto down =
      ChatTemplate::Parse("{{ range(-9223372036854775800, -9223372036854775807, -5) | length }}");
  EXPECT_EQ(down->Render({}, false), "2");
  auto huge = ChatTemplate::Parse("{{ range(-9223372036854775807, 9223372036854775807) }}");
  EXPECT_THAT(ErrorOf([&] { huge->Render({}, false); }), HasSubstr("MAX_RANGE"));
}

// ---- item 3: recursion limits ------------------------------------------------------------------

TEST(Issue16Recursion, SequenceNormalizerNested50000DeepIsRefusedNotACrash) {
  const std::string normalizer =
      Nested(50000, R"({"type": "Sequence", "normalizers": [)", "]}", R"({"type": "NFC"})");
  const std::string msg = ErrorOf([&] {
    Tokenizer::FromJson(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
                            "normalizer": )" +
                        normalizer + "}");
  });
  EXPECT_THAT(msg, HasSubstr("nested deeper than 256"));
}

TEST(Issue16Recursion, GenaiConfigNested100000DeepIsRefused) {
  const std::string text =
      Replace(kConfig, R"("search": {"max_length": 128})",
              R"("search": {"max_length": 128}, "x": )" + Nested(100000, "[", "]", "1"));
  EXPECT_THAT(ConfigError(text), HasSubstr("nested deeper than 256"));
}

TEST(Issue16Recursion, ChatMessagesNested100000DeepAreRefused) {
  auto t = ChatTemplate::Parse("{{ messages | length }}");
  const std::string msg = ErrorOf([&] { t->RenderJson(Nested(100000, "[", "]", ""), false); });
  EXPECT_THAT(msg, HasSubstr("nested deeper than 256"));
}

TEST(Issue16Recursion, DepthCheckIgnoresBracketsInStrings) {
  EXPECT_NO_THROW(internal::CheckJsonDepth(R"(["[[[[[[[[[[[[[[[[[[[[[\"[[[[[[[["])", "t"));
  const std::string ok = Nested(256, "[", "]", "");
  EXPECT_NO_THROW(internal::CheckJsonDepth(ok, "t"));
  EXPECT_THROW(internal::CheckJsonDepth("[" + ok + "]", "t"), Error);
}

// ---- item 5: files that are not files ----------------------------------------------------------

TEST(Issue16Files, GenaiConfigSymlinkedToDevZeroIsRefusedAtOnce) {
  TempDir d;
  fs::create_symlink("/dev/zero", d.path() / "genai_config.json");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = ErrorOf([&] { internal::LoadGenaiConfig(d.path()); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_THAT(msg, HasSubstr("a character device, not a regular file"));
}

TEST(Issue16Files, TokenizerJsonSymlinkedToDevZeroIsRefusedAtOnce) {
  TempDir d;
  fs::create_symlink("/dev/zero", d.path() / "tokenizer.json");
  const std::string msg = ErrorOf([&] { Tokenizer::FromFile(d.path()); });
  EXPECT_THAT(msg, HasSubstr("not a regular file"));
}

TEST(Issue16Files, FifoAsFileDoesNotBlock) {
  TempDir d;
  ASSERT_EQ(mkfifo((d.path() / "genai_config.json").c_str(), 0600), 0);
  const std::string msg = ErrorOf([&] { internal::LoadGenaiConfig(d.path()); });
  EXPECT_THAT(msg, HasSubstr("a FIFO (named pipe), not a regular file"));
  ASSERT_EQ(mkfifo((d.path() / "model.onnx").c_str(), 0600), 0);
  EXPECT_THAT(ErrorOf([&] { internal::CheckRegularFile(d.path() / "model.onnx", "model"); }),
              HasSubstr("FIFO"));
}

TEST(Issue16Files, SymlinkLoopIsNamedNotAFilesystemError) {
  TempDir d;
  fs::create_symlink(d.path() / "b", d.path() / "a");
  fs::create_symlink(d.path() / "a", d.path() / "b");
  ErrorCode code = ErrorCode::Internal;
  const std::string msg =
      ErrorOf([&] { internal::LoadGenaiConfig(d.path() / "a" / "genai_config.json"); }, &code);
  EXPECT_THAT(msg, HasSubstr("symlink loop"));
  EXPECT_THAT(msg, Not(HasSubstr("filesystem error")));
  fs::create_symlink(d.path() / "loop", d.path() / "loop");
  EXPECT_THAT(ErrorOf([&] { Tokenizer::FromFile(d.path() / "loop"); }), HasSubstr("symlink loop"));
}

TEST(Issue16Files, UnreadableFolderSaysPermissionDenied) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores permission bits";
  TempDir d;
  fs::create_directory(d.path() / "m");
  WriteFile(d.path() / "m" / "genai_config.json", kConfig);
  fs::permissions(d.path() / "m", fs::perms::none);
  const std::string msg = ErrorOf([&] { internal::LoadGenaiConfig(d.path() / "m"); });
  EXPECT_THAT(msg, HasSubstr("permission denied"));
}

TEST(Issue16Files, OversizedFileIsRefusedBeforeReading) {
  TempDir d;
  WriteFile(d.path() / "f", std::string(4096, ' '));
  EXPECT_THAT(ErrorOf([&] { internal::ReadRegularFile(d.path() / "f", 1024, "f"); }),
              HasSubstr("more than ebb's limit"));
  EXPECT_EQ(internal::ReadRegularFile(d.path() / "f", 4096, "f").size(), 4096u);
}

// ---- item 6: messages that read well -----------------------------------------------------------

TEST(Issue16Messages, ContextLength1e400NamesTheFieldNotAJsonException) {
  const std::string msg =
      ConfigError(Replace(kConfig, "\"context_length\": 256", "\"context_length\": 1e400"));
  EXPECT_THAT(msg, HasSubstr("/m/genai_config.json"));
  EXPECT_THAT(msg, HasSubstr("context_length"));
  EXPECT_THAT(msg, Not(HasSubstr("json.exception")));
}

TEST(Issue16Messages, RawBytesFromACorruptFileAreEscaped) {
  const std::string msg =
      ConfigError(Replace(kConfig, "\"type\": \"llama\"", "\"type\": \"\\u0001\\u001b[31m\""));
  EXPECT_THAT(msg, HasSubstr("\\x01\\x1b[31m"));
  EXPECT_THAT(msg, Not(HasSubstr("\x1b")));
  const std::string bad_utf8 = ConfigError(Replace(kConfig, "\"llama\"", "\"ll\xff\x01\""));
  EXPECT_THAT(bad_utf8, Not(HasSubstr("\xff")));
}

TEST(Issue16Messages, SearchFloatsMustBeFinite) {
  EXPECT_THAT(ConfigError(Replace(kConfig, "\"max_length\": 128", "\"temperature\": 1e300")),
              HasSubstr("/search/temperature: expected a finite number"));
}

TEST(Issue16Messages, EscapeForMessageKeepsUtf8AndCuts) {
  EXPECT_EQ(internal::EscapeForMessage("caf\xc3\xa9\n\xff"), "caf\xc3\xa9\\x0a\\xff");
  EXPECT_EQ(internal::EscapeForMessage(std::string(300, 'a'), 10), "aaaaaaaaaa...");
  EXPECT_EQ(internal::OneLine("a\n  b\r\n c  "), "a b c");
}

// ---- item 7: honest caps -----------------------------------------------------------------------

TEST(Issue16Caps, OutOfRangeSpecialTokenIdsAreErrors) {
  EXPECT_THAT(ConfigError(Replace(kConfig, "\"bos_token_id\": 1", "\"bos_token_id\": 512")),
              HasSubstr("/model/bos_token_id: token id 512 is outside the vocabulary"));
  EXPECT_THAT(ConfigError(Replace(kConfig, "\"pad_token_id\": 0", "\"pad_token_id\": -7")),
              HasSubstr("/model/pad_token_id"));
  EXPECT_THAT(ConfigError(Replace(kConfig, "[2, 3]", "[2, 9999]")),
              HasSubstr("/model/eos_token_id/1"));
  EXPECT_THAT(ConfigError(Replace(kConfig, "[2, 3]", "4294967297")),
              HasSubstr("/model/eos_token_id"));
}

TEST(Issue16Caps, BeamSearchAndSeveralReturnSequencesAreRefused) {
  EXPECT_THAT(ConfigError(Replace(kConfig, "\"max_length\": 128", "\"num_beams\": 4")),
              HasSubstr("/search/num_beams: beam search (num_beams=4) is not supported"));
  EXPECT_THAT(ConfigError(Replace(kConfig, "\"max_length\": 128", "\"num_return_sequences\": 2")),
              HasSubstr("/search/num_return_sequences"));
  EXPECT_NO_THROW(internal::ParseGenaiConfig(
      Replace(kConfig, "\"max_length\": 128", "\"num_beams\": 1, \"num_return_sequences\": 1"),
      "/m/genai_config.json"));
}

}  // namespace
}  // namespace ebb
