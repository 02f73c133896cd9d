// `ebb chat-template` end to end, on the built CLI (tests/test_env.h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "template_test_util.h"
#include "test_env.h"

namespace ebb {
namespace {

struct RunResult {
  int status = -1;
  std::string out;
};

RunResult RunCommand(const std::string& command) {
  RunResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class ChatTemplateCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = ebb::testing::CliPath();
    ASSERT_TRUE(std::filesystem::exists(cli_)) << "the ebb CLI is not built: " << cli_;
    dir_ = std::filesystem::temp_directory_path() /
           ("ebb_chat_template_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string cli_;
  std::filesystem::path dir_;
};

TEST_F(ChatTemplateCliTest, RendersThePromptWithoutATrailingNewline) {
  Write(
      "tokenizer_config.json",
      R"({"eos_token": "<|endoftext|>", "chat_template": )" + std::string(R"(")") +
          R"({% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"})");
  Write("conv.json", R"([{"role": "user", "content": "Hi"}])");
  RunResult r = RunCommand(cli_ + " chat-template " + dir_.string() + " --messages " +
                           (dir_ / "conv.json").string() + " --add-generation-prompt");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "<|user|>Hi<|end|><|assistant|>");
}

TEST_F(ChatTemplateCliTest, TemplateOverrideAndToolsFromTheMessagesObject) {
  Write("t.jinja", "{{ tools[0].name }}:{{ messages|length }}");
  Write("conv.json",
        R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f"}]})");
  RunResult r =
      RunCommand(cli_ + " chat-template " + dir_.string() + " --messages " +
                 (dir_ / "conv.json").string() + " --template " + (dir_ / "t.jinja").string());
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "f:1");
}

TEST_F(ChatTemplateCliTest, TemplateErrorsExitNonZero) {
  Write("t.jinja", "{{ raise_exception('nope') }}");
  Write("conv.json", "[]");
  RunResult r = RunCommand(cli_ + " chat-template " + dir_.string() + " --messages " +
                           (dir_ / "conv.json").string() + " --template " +
                           (dir_ / "t.jinja").string() + " 2>&1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("error: nope"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ebb
