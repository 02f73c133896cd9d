// Renders the real chat templates in tests/template/data/ and inline feature templates with
// ebb's interpreter and compares with the outputs of the reference Jinja2 implementation
// (tools/render_chat_template.py, committed under tests/template/data/expected/).
#include "ebb/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "template_test_util.h"

namespace ebb {
namespace {

using ordered_json = nlohmann::ordered_json;
using testing::FixedNow;
using testing::ReadText;
using testing::TemplateDataDir;

const ordered_json& Cases() {
  static const ordered_json cases =
      ordered_json::parse(ReadText(TemplateDataDir() / "cases.json"))["cases"];
  return cases;
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const auto& c : Cases()) names.push_back(c["name"].get<std::string>());
  return names;
}

const ordered_json& FindCase(const std::string& name) {
  for (const auto& c : Cases()) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

struct Outcome {
  bool ok = false;
  std::string text;  // rendered text or error message
  ErrorCode code = ErrorCode::Internal;
};

Outcome RenderCase(const ordered_json& c) {
  std::string source = c.contains("template")
                           ? ReadText(TemplateDataDir() / c["template"].get<std::string>())
                           : c["source"].get<std::string>();
  ChatTemplateOptions options;
  options.clock = FixedNow;
  const ordered_json& ctx = c["context"];
  ordered_json extra = ordered_json::object();
  for (const auto& [k, v] : ctx.items()) {
    if (k != "messages" && k != "add_generation_prompt") extra[k] = v;
  }
  Outcome out;
  try {
    auto t = ChatTemplate::Parse(source, c["name"].get<std::string>(), options);
    out.text = t->RenderJson(ctx.value("messages", ordered_json::array()).dump(),
                             ctx.value("add_generation_prompt", false), extra.dump());
    out.ok = true;
  } catch (const Error& e) {
    out.text = e.what();
    out.code = e.code();
  }
  return out;
}

class ReferenceCaseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceCaseTest, MatchesJinja2) {
  const ordered_json& c = FindCase(GetParam());
  const auto expected_dir = TemplateDataDir() / "expected";
  const auto ok_path = expected_dir / (GetParam() + ".txt");
  const auto err_path = expected_dir / (GetParam() + ".error.txt");
  Outcome got = RenderCase(c);
  if (std::filesystem::exists(ok_path)) {
    ASSERT_TRUE(got.ok) << got.text;
    EXPECT_EQ(got.text, ReadText(ok_path));
  } else {
    ASSERT_TRUE(std::filesystem::exists(err_path)) << "missing expected output for " << GetParam();
    ASSERT_FALSE(got.ok) << "rendered instead of failing:\n" << got.text;
    EXPECT_EQ(got.code, ErrorCode::InvalidArgument);
    // Model templates fail only through raise_exception, whose message is passed verbatim.
    if (c.contains("template") || c.value("exact_error", false)) {
      EXPECT_EQ(got.text, ReadText(err_path));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceCaseTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

// One explicit test per model family: system/user/assistant/user + generation prompt.
void ExpectSystemConversation(const std::string& short_name) {
  const std::string name = short_name + "_system_conv";
  Outcome got = RenderCase(FindCase(name));
  const auto ok_path = TemplateDataDir() / "expected" / (name + ".txt");
  ASSERT_TRUE(got.ok) << got.text;
  EXPECT_EQ(got.text, ReadText(ok_path));
}

TEST(ChatTemplateModels, Phi35Mini) { ExpectSystemConversation("phi35"); }
TEST(ChatTemplateModels, Phi4) { ExpectSystemConversation("phi4"); }
TEST(ChatTemplateModels, Phi4Mini) { ExpectSystemConversation("phi4mini"); }
TEST(ChatTemplateModels, Llama31) { ExpectSystemConversation("llama31"); }
TEST(ChatTemplateModels, Llama32) { ExpectSystemConversation("llama32"); }
TEST(ChatTemplateModels, Qwen25) { ExpectSystemConversation("qwen25"); }
TEST(ChatTemplateModels, Mistral7BV03) { ExpectSystemConversation("mistral03"); }

TEST(ChatTemplateModels, Gemma2RejectsSystemRoleAndRendersUserConversation) {
  Outcome sys = RenderCase(FindCase("gemma2_system_conv"));
  ASSERT_FALSE(sys.ok);
  EXPECT_EQ(sys.code, ErrorCode::InvalidArgument);
  EXPECT_EQ(sys.text, "System role not supported");
  Outcome user = RenderCase(FindCase("gemma2_user_conv"));
  ASSERT_TRUE(user.ok) << user.text;
  EXPECT_EQ(user.text, ReadText(TemplateDataDir() / "expected" / "gemma2_user_conv.txt"));
}

TEST(ChatTemplateModels, Llama32DateComesFromInjectedClock) {
  ChatTemplateOptions options;
  options.bos_token = "<|begin_of_text|>";
  options.clock = [] {
    std::tm tm{};
    tm.tm_year = 2025 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 2;
    tm.tm_hour = 12;
    tm.tm_isdst = -1;
    return std::chrono::system_clock::from_time_t(std::mktime(&tm));
  };
  auto t = ChatTemplate::Parse(
      ReadText(TemplateDataDir() / "meta-llama-Llama-3.2-3B-Instruct.jinja"), "llama32", options);
  std::string out = t->Render({{"user", "hi"}}, true);
  EXPECT_NE(out.find("Today Date: 02 Jan 2025\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace ebb
