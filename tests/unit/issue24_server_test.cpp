// Issue 24 (findings 17 and 20) at the service's request rules, without a server:
// response_format {"type": 5} is a 400 naming response_format.type and the allowed value (it
// was the JSON library's "type must be string, but is number" with no field); a load body's
// "chat_template" is the chat_template option, any client's as text and the admin's as a path;
// a models file's template path is relative to the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "server/admin_only.h"
#include "server/api_error.h"
#include "server/models_file.h"
#include "server/openai_request.h"

namespace ebb::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::ordered_json;

ApiError ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (...) {
    return FromCurrentException();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Issue24Requests, ResponseFormatTypeOfTheWrongTypeNamesTheFieldAndTheValues) {
  const std::string head = R"({"model": "m", "messages": [{"role": "user", "content": "x"}], )";
  for (const char* rf : {R"({"type": 5})", R"({"type": null})", R"({})", R"({"type": [1]})"}) {
    const ApiError e =
        ErrorOf([&] { ParseCompletionRequest(head + "\"response_format\": " + rf + "}", true); });
    EXPECT_EQ(e.status, 400) << rf;
    EXPECT_EQ(e.param.value_or(""), "response_format.type") << rf;
    EXPECT_THAT(e.message, HasSubstr("\"text\"")) << rf;
    EXPECT_THAT(e.message, Not(HasSubstr("json.exception"))) << rf;
  }
  const ApiError other = ErrorOf(
      [&] { ParseCompletionRequest(head + R"("response_format": {"type": "yaml"}})", true); });
  EXPECT_EQ(other.param.value_or(""), "response_format.type");
  EXPECT_EQ(other.code.value_or(""), "unsupported_value");
  const ApiError not_object =
      ErrorOf([&] { ParseCompletionRequest(head + R"("response_format": "text"})", true); });
  EXPECT_EQ(not_object.param.value_or(""), "response_format");
  EXPECT_NO_THROW(ParseCompletionRequest(head + R"("response_format": {"type": "text"}})", true));
}

TEST(Issue24Requests, ALoadBodysChatTemplateIsTheOptionTextForAnyClientAPathForTheAdmin) {
  const OptionList text = OptionListFromJson(Json::parse(R"({"chat_template": "{{ x }}"})"));
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0].first, "chat_template");
  EXPECT_NO_THROW(RefuseAdminOnlyOptions(text)) << "the template's text is any client's";
  const OptionList path = OptionListFromJson(Json::parse(R"({"chat_template": "/etc/x"})"));
  const ApiError e = ErrorOf([&] { RefuseAdminOnlyOptions(path); });
  EXPECT_EQ(e.status, 403);
  EXPECT_EQ(e.code.value_or(""), "admin_only_option");
  EXPECT_THAT(e.message, HasSubstr("sends the template's text"));
  const ApiError bad = ErrorOf([&] { OptionListFromJson(Json::parse(R"({"chat_template": 5})")); });
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.param.value_or(""), "chat_template");
}

TEST(Issue24Requests, AModelsFileTemplatePathIsRelativeToTheFile) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("ebb-issue24-models-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "m");
  std::ofstream(dir / "m" / "genai_config.json") << "{}";
  std::ofstream(dir / "models.json") << R"({"models": {
      "a": {"path": "m", "chat_template": "t.jinja"},
      "b": {"path": "m", "options": {"chat_template": "{{ messages }}"}}}})";
  const auto models = ReadModelsFile(dir / "models.json");
  ASSERT_EQ(models.at("a").options.size(), 1u);
  EXPECT_EQ(models.at("a").options[0],
            (std::pair<std::string, std::string>{"chat_template", (dir / "t.jinja").string()}));
  EXPECT_EQ(models.at("b").options[0].second, "{{ messages }}") << "text stays text";
  std::ofstream(dir / "models.json", std::ios::trunc)
      << R"({"models": {"a": {"path": "m", "chat_templat": "t.jinja"}}})";
  try {
    ReadModelsFile(dir / "models.json");
    ADD_FAILURE() << "a misspelled chat_template was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'chat_template'"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ebb::server
