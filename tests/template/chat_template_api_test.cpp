// Error reporting, limits and the ChatTemplate API (model folders, special tokens, options).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "template_test_util.h"

namespace ebb {
namespace {

// Renders `source` with one user message; returns the output or throws.
std::string RenderSource(const std::string& source, ChatTemplateOptions options = {}) {
  return ChatTemplate::Parse(source, "t", std::move(options))->Render({{"user", "hi"}}, true);
}

// The ebb::Error a parse or render of `source` throws (fails the test if none).
Error ErrorOf(const std::string& source, ChatTemplateOptions options = {}) {
  try {
    RenderSource(source, std::move(options));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << source;
  return Error(ErrorCode::Internal, "");
}

Error ParseErrorOf(const std::string& source) {
  try {
    ChatTemplate::Parse(source, "t");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no parse error for: " << source;
  return Error(ErrorCode::Internal, "");
}

TEST(ChatTemplateErrors, UnsupportedTagsFailAtParseTimeWithLineAndColumn) {
  Error e = ParseErrorOf("ok\n  {% include 'other.jinja' %}");
  EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  EXPECT_STREQ(e.what(), "t:2:6: unsupported tag 'include'");
  EXPECT_STREQ(ParseErrorOf("{% extends 'base' %}").what(), "t:1:4: unsupported tag 'extends'");
  EXPECT_STREQ(ParseErrorOf("{% call foo() %}x{% endcall %}").what(),
               "t:1:4: unsupported tag 'call'");
}

TEST(ChatTemplateErrors, UnknownFiltersAndTestsFailAtParseTime) {
  EXPECT_STREQ(ParseErrorOf("{{ x | frobnicate }}").what(),
               "t:1:8: unsupported filter 'frobnicate'");
  EXPECT_STREQ(ParseErrorOf("line1\n{% if x is prime %}{% endif %}").what(),
               "t:2:12: unsupported test 'prime'");
}

TEST(ChatTemplateErrors, SyntaxErrorsNameThePosition) {
  EXPECT_STREQ(ParseErrorOf("{% for m in messages %}x").what(),
               "t:1:4: 'for' is never closed (expected 'else' or 'endfor' before the end of the "
               "template)");
  EXPECT_STREQ(ParseErrorOf("{{ 'abc }}").what(), "t:1:4: unterminated string literal");
  EXPECT_STREQ(ParseErrorOf("{{ 1 + }}").what(), "t:1:8: unexpected '}}' in expression");
  EXPECT_STREQ(ParseErrorOf("{# never closed").what(),
               "t:1:1: unterminated comment; expected '#}'");
  EXPECT_STREQ(ParseErrorOf("{% endif %}").what(),
               "t:1:4: unexpected 'endif' (no matching opening tag)");
  EXPECT_STREQ(ParseErrorOf("{% break %}").what(), "t:1:4: 'break' outside of a for loop");
  EXPECT_STREQ(ParseErrorOf("{{ a $ b }}").what(), "t:1:6: unexpected character '$' in tag");
  EXPECT_STREQ(ParseErrorOf("{% for x in y recursive %}{% endfor %}").what(),
               "t:1:15: unsupported: recursive for loops");
}

TEST(ChatTemplateErrors, RenderErrorsNameThePosition) {
  EXPECT_STREQ(ErrorOf("\n{{ messages[0].nope.deeper }}").what(),
               "t:2:20: 'dict object' has no attribute 'nope'");
  EXPECT_STREQ(ErrorOf("{{ 'a' + 1 }}").what(),
               "t:1:8: can only concatenate str (not \"int\") to str");
  EXPECT_STREQ(ErrorOf("{% set x = 1 %}{% set x.y = 2 %}").what(),
               "t:1:19: cannot assign attribute on non-namespace object 'x'");
  EXPECT_STREQ(ErrorOf("{{ 1 // 0 }}").what(), "t:1:6: integer division or modulo by zero");
}

TEST(ChatTemplateErrors, RaiseExceptionMessageIsVerbatim) {
  Error e =
      ErrorOf("{% if messages[0].role == 'user' %}{{ raise_exception('No users!') }}{% endif %}");
  EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  EXPECT_STREQ(e.what(), "No users!");
}

TEST(ChatTemplateLimits, RunawayLoopsHitTheStepLimit) {
  ChatTemplateOptions options;
  options.max_steps = 10000;
  Error e = ErrorOf(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", options);
  EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
}

TEST(ChatTemplateLimits, OutputAndStringSizesAreBounded) {
  ChatTemplateOptions options;
  options.max_output_bytes = 1000;
  EXPECT_EQ(ErrorOf("{% for i in range(2000) %}x{% endfor %}", options).code(),
            ErrorCode::ResourceExhausted);
  EXPECT_EQ(ErrorOf("{% set s = 'ab' * 100000 %}", options).code(), ErrorCode::ResourceExhausted);
  EXPECT_EQ(ErrorOf("{% set ns = namespace(s='x') %}{% for i in range(100) %}"
                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    options)
                .code(),
            ErrorCode::ResourceExhausted);
  EXPECT_EQ(ErrorOf("{{ range(1000000) }}").code(), ErrorCode::InvalidArgument);  // MAX_RANGE
}

TEST(ChatTemplateLimits, MacroRecursionIsBounded) {
  Error e = ErrorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
}

TEST(ChatTemplateLimits, DeepNestingIsRejectedAtParseTime) {
  std::string deep = "{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}";
  EXPECT_EQ(ParseErrorOf(deep).code(), ErrorCode::InvalidArgument);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  chain += " }}";
  EXPECT_STREQ(ParseErrorOf(chain).what(), "t:1:514: expression nested too deeply");
  std::string blocks;
  for (int i = 0; i < 200; ++i) blocks += "{% if true %}";
  EXPECT_EQ(ParseErrorOf(blocks).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(ErrorOf("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").code(),
            ErrorCode::InvalidArgument);  // self-reference: printing is depth-limited
}

TEST(ChatTemplateApi, RenderSimpleMessagesWithSpecialTokens) {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  auto t = ChatTemplate::Parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}"
      "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}",
      "t", options);
  EXPECT_EQ(t->Render({{"system", "S"}, {"user", "U"}}, true),
            "<s>[system]S</s>[user]U</s>[assistant]");
  EXPECT_EQ(t->Render({{"user", "U"}}, false), "<s>[user]U</s>");
  EXPECT_EQ(t->bos_token(), "<s>");
}

TEST(ChatTemplateApi, RenderJsonPassesToolsAndKeepsKeyOrder) {
  auto t = ChatTemplate::Parse(
      "{{ tools | tojson }}|{{ messages[0].tool_calls[0].function.arguments | tojson }}");
  std::string out = t->RenderJson(
      R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"z":1,"a":[true,null,1.5]}}}]}])",
      false, R"({"tools":[{"b":1,"a":2}]})");
  EXPECT_EQ(out, R"([{"b": 1, "a": 2}]|{"z": 1, "a": [true, null, 1.5]})");
  EXPECT_THROW(t->RenderJson("{}", false), Error);         // messages must be an array
  EXPECT_THROW(t->RenderJson("[", false), Error);          // invalid JSON
  EXPECT_THROW(t->RenderJson("[]", false, "[1]"), Error);  // extra context must be an object
}

class ModelDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ebb_chat_template_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ModelDirTest, ReadsTemplateAndAddedTokenObjectsFromTokenizerConfig) {
  Write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "unk_token": "<unk>",
    "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ unk_token }}"})");
  auto t = ChatTemplate::FromModelDir(dir_);
  EXPECT_EQ(t->Render({{"user", "x"}}, false), "<s>x</s><unk>");
}

TEST_F(ModelDirTest, PicksTheDefaultTemplateFromAList) {
  Write("tokenizer_config.json", R"({"chat_template": [
    {"name": "tool_use", "template": "tools"}, {"name": "default", "template": "default"}]})");
  EXPECT_EQ(ChatTemplate::FromModelDir(dir_)->Render({}, false), "default");
}

TEST_F(ModelDirTest, JinjaFileAndOverrideTakePrecedence) {
  Write("tokenizer_config.json", R"({"chat_template": "config", "eos_token": "E"})");
  Write("chat_template.jinja", "file{{ eos_token }}");
  Write("override.jinja", "override");
  EXPECT_EQ(ChatTemplate::FromModelDir(dir_)->Render({}, false), "fileE");
  EXPECT_EQ(ChatTemplate::FromModelDir(dir_, dir_ / "override.jinja")->Render({}, false),
            "override");
  try {
    ChatTemplate::FromModelDir(dir_, dir_ / "missing.jinja");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

TEST_F(ModelDirTest, MissingTemplateIsNotFound) {
  Write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  try {
    ChatTemplate::FromModelDir(dir_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
  }
}

TEST(ChatTemplateApi, RenderIsThreadSafe) {
  auto t = ChatTemplate::Parse(
      testing::ReadText(testing::TemplateDataDir() / "Qwen-Qwen2.5-7B-Instruct.jinja"), "qwen");
  const std::string expected = t->Render({{"user", "hello"}}, true);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        if (t->Render({{"user", "hello"}}, true) != expected) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace ebb
