// Regression tests for issue 10's CLI and execution-provider bugs, on the built `ebb`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "ebb/model.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

// Issue 10, bug 6: `ebb generate ... --log-level info` was refused; only
// `ebb --log-level info generate ...` worked.
TEST(CliIssue10, GlobalFlagsWorkAfterTheSubcommand) {
  const std::string dir = Tiny().string();
  auto r = testing::RunCli("generate " + dir + " --input-ids 5,17 --max-length 4 --log-level info");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("loaded "));  // the info-level load line
  r = testing::RunCli("--log-level info generate " + dir + " --input-ids 5,17 --max-length 4");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("loaded "));
  r = testing::RunCli("info " + dir + " --log-level off");
  EXPECT_EQ(r.status, 0) << r.out;
  r = testing::RunCli("generate " + dir + " --input-ids 5,17 --no-such-flag");
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--no-such-flag"));
}

// Issue 10, bug 7: `ebb generate /nonexistent --prompt hi` said "tokenizer.json not found".
TEST(CliIssue10, EveryModelCommandSaysThereIsNoModelFolder) {
  for (const char* cmd :
       {"generate /nonexistent/model --prompt hi", "generate /nonexistent/model --input-ids 1,2",
        "info /nonexistent/model", "bench /nonexistent/model",
        "tokenize /nonexistent/model --text hi", "detokenize /nonexistent/model --ids 1,2",
        "chat-template /nonexistent/model --messages m.json"}) {
    const auto r = testing::RunCli(cmd);
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("error: no model folder at /nonexistent/model")) << cmd;
    EXPECT_THAT(r.out, Not(HasSubstr("tokenizer.json not found"))) << cmd;
  }
  // A file where a folder is expected.
  const auto r =
      testing::RunCli("generate " + (Tiny() / "genai_config.json").string() + " --input-ids 1,2");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("is not a folder"));
}

}  // namespace
}  // namespace ebb
