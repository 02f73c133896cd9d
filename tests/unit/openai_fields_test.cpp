// Issue 24 item 16: OpenAI's logit_bias, presence_penalty, frequency_penalty, best_of and
// top_logprobs were accepted and changed nothing. They are now parsed into the request, or
// refused with a 400 naming the field (server/openai_request.h). tests/http/test_serve_sampling.py
// checks what they do over real HTTP.
#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace ebb::server {
namespace {

std::string Chat(const std::string& extra) {
  return R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" +
         (extra.empty() ? std::string() : ", " + extra) + "}";
}
std::string Completion(const std::string& extra) {
  return R"({"model": "m", "prompt": "hi")" + (extra.empty() ? std::string() : ", " + extra) + "}";
}

// The ApiError a body gets (status 0 when it parses).
ApiError Refusal(const std::string& body, bool chat = true) {
  try {
    ParseCompletionRequest(body, chat);
  } catch (const ApiException& e) {
    return e.error;
  }
  return ApiError{0, "", "", std::nullopt, std::nullopt, 0};
}

TEST(OpenAiFields, PenaltiesAndLogitBiasAreParsed) {
  const CompletionRequest r = ParseCompletionRequest(
      Chat(
          R"("presence_penalty": 0.5, "frequency_penalty": -2, "logit_bias": {"7": -100, "12": 3.5})"),
      true);
  EXPECT_FLOAT_EQ(*r.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(*r.frequency_penalty, -2.0f);
  ASSERT_TRUE(r.logit_bias);
  EXPECT_FLOAT_EQ(r.logit_bias->at(7), -100.0f);
  EXPECT_FLOAT_EQ(r.logit_bias->at(12), 3.5f);
  const CompletionRequest none = ParseCompletionRequest(Completion(""), false);
  EXPECT_FALSE(none.presence_penalty);
  EXPECT_FALSE(none.logit_bias);
  EXPECT_FALSE(none.logprobs);
}

TEST(OpenAiFields, BadValuesAre400sNamingTheField) {
  struct Case {
    std::string extra;
    std::string param;
  };
  for (const Case& c : std::vector<Case>{
           {R"("presence_penalty": 2.5)", "presence_penalty"},
           {R"("frequency_penalty": "high")", "frequency_penalty"},
           {R"("logit_bias": [1, 2])", "logit_bias"},
           {R"("logit_bias": {"abc": 1})", "logit_bias"},
           {R"("logit_bias": {"-3": 1})", "logit_bias"},
           {R"("logit_bias": {"1.5": 1})", "logit_bias"},
           {R"("logit_bias": {"5": 101})", "logit_bias"},
           {R"("logit_bias": {"5": "x"})", "logit_bias"},
           {R"("best_of": 2)", "best_of"},
           {R"("best_of": 0)", "best_of"},
           {R"("top_logprobs": 3)", "top_logprobs"},  // without logprobs: true
           {R"("logprobs": true, "top_logprobs": 21)", "top_logprobs"},
           {R"("logprobs": 3)", "logprobs"},  // chat: a boolean
       }) {
    const ApiError e = Refusal(Chat(c.extra));
    EXPECT_EQ(e.status, 400) << c.extra;
    EXPECT_EQ(e.param.value_or(""), c.param) << c.extra << ": " << e.message;
    EXPECT_NE(e.message.find(c.param), std::string::npos) << e.message;
  }
  // The key and the value are in the message.
  EXPECT_NE(Refusal(Chat(R"("logit_bias": {"abc": 1})")).message.find("abc"), std::string::npos);
  EXPECT_NE(Refusal(Chat(R"("logit_bias": {"5": 101})")).message.find("101"), std::string::npos);
  EXPECT_EQ(Refusal(Chat(R"("best_of": 2)")).code.value_or(""), "unsupported_value");
  // /v1/completions: logprobs is an integer 0 to 20; top_logprobs is chat's field.
  EXPECT_EQ(Refusal(Completion(R"("logprobs": true)"), false).param.value_or(""), "logprobs");
  EXPECT_EQ(Refusal(Completion(R"("logprobs": 21)"), false).param.value_or(""), "logprobs");
  EXPECT_EQ(Refusal(Completion(R"("top_logprobs": 2)"), false).param.value_or(""), "top_logprobs");
  EXPECT_EQ(Refusal(Completion(R"("best_of": 3)"), false).param.value_or(""), "best_of");
}

TEST(OpenAiFields, BestOfOneAndLogprobsAreAccepted) {
  EXPECT_EQ(Refusal(Completion(R"("best_of": 1)"), false).status, 0);
  const CompletionRequest chat =
      ParseCompletionRequest(Chat(R"("logprobs": true, "top_logprobs": 5)"), true);
  EXPECT_TRUE(chat.logprobs);
  EXPECT_EQ(chat.top_logprobs, 5);
  const CompletionRequest comp = ParseCompletionRequest(Completion(R"("logprobs": 0)"), false);
  EXPECT_TRUE(comp.logprobs);
  EXPECT_EQ(comp.top_logprobs, 0);
  const CompletionRequest off = ParseCompletionRequest(Chat(R"("logprobs": false)"), true);
  EXPECT_FALSE(off.logprobs);
}

// Issue 25: llama.cpp's cache_prompt, a bool on both routes (absent: the option's default).
TEST(OpenAiFields, CachePromptIsABool) {
  EXPECT_FALSE(ParseCompletionRequest(Chat(""), true).cache_prompt);
  EXPECT_EQ(ParseCompletionRequest(Chat(R"("cache_prompt": false)"), true).cache_prompt, false);
  EXPECT_EQ(ParseCompletionRequest(Completion(R"("cache_prompt": true)"), false).cache_prompt,
            true);
  for (const char* bad :
       {R"("cache_prompt": "x")", R"("cache_prompt": 1)", R"("cache_prompt": {})"}) {
    for (const bool chat : {true, false}) {
      const ApiError e = Refusal(chat ? Chat(bad) : Completion(bad), chat);
      EXPECT_EQ(e.status, 400) << bad;
      EXPECT_EQ(e.param, "cache_prompt") << bad;
      EXPECT_NE(e.message.find("true or false"), std::string::npos) << e.message;
    }
  }
}

// The prefix pin body: exactly one of prompt, messages, input_ids.
ApiError PrefixRefusal(const std::string& body) {
  try {
    ParsePrefixRequest(body);
  } catch (const ApiException& e) {
    return e.error;
  }
  return ApiError{0, "", "", std::nullopt, std::nullopt, 0};
}

TEST(PrefixBody, OneOfPromptMessagesOrInputIds) {
  EXPECT_EQ(ParsePrefixRequest(R"({"prompt": "You are a helpful assistant."})").prompt,
            "You are a helpful assistant.");
  const PrefixRequest m = ParsePrefixRequest(
      R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "be brief"}]}]})");
  ASSERT_EQ(m.messages.size(), 1u);
  EXPECT_EQ(m.messages[0].role, "system");
  EXPECT_EQ(m.messages[0].content, "be brief");
  EXPECT_EQ(ParsePrefixRequest(R"({"input_ids": [0, 5, 2147483647]})").input_ids,
            (std::vector<int32_t>{0, 5, 2147483647}));
  struct Case {
    std::string body;
    std::string param;
  };
  for (const Case& c : std::vector<Case>{
           {"", "prompt"},
           {"{}", "prompt"},
           {R"({"prompt": null})", "prompt"},
           {R"({"prompt": ""})", "prompt"},
           {R"({"prompt": 5})", "prompt"},
           {R"({"prompt": "a", "input_ids": [1]})", "input_ids"},
           {R"({"messages": []})", "messages"},
           {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
           {R"({"input_ids": []})", "input_ids"},
           {R"({"input_ids": [1, -2]})", "input_ids"},
           {R"({"input_ids": [1.5]})", "input_ids"},
           {R"({"input_ids": [2147483648]})", "input_ids"},
           {R"({"input_ids": "1 2"})", "input_ids"},
       }) {
    const ApiError e = PrefixRefusal(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_NE(PrefixRefusal("").message.find("prefix/drop"), std::string::npos);
  EXPECT_EQ(PrefixRefusal("[1]").status, 400);
  EXPECT_EQ(PrefixRefusal("{bad").code, "invalid_json");
}

}  // namespace
}  // namespace ebb::server
