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

}  // namespace
}  // namespace ebb
