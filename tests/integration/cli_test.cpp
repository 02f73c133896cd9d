// Runs the built `ebb` binary (path in $EBB_CLI) and checks what a user sees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_env.h"

namespace {

using ::testing::HasSubstr;

struct RunResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

RunResult RunEbb(const std::string& args) {
  RunResult r;
  const std::string cmd = ebb::testing::CliPath() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(Cli, VersionShowsOrtAndCpuProvider) {
  const RunResult r = RunEbb("--version");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("ebb 0."));
  EXPECT_THAT(r.out, HasSubstr("onnxruntime 1.29.0"));
  EXPECT_THAT(r.out, HasSubstr("CPUExecutionProvider"));
}

TEST(Cli, InfoOnMissingFolderIsAClearError) {
  const RunResult r = RunEbb("info /nonexistent/model");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error: /nonexistent/model/genai_config.json: not found"));
}

TEST(Cli, UnknownSubcommandFails) {
  const RunResult r = RunEbb("frobnicate");
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("frobnicate"));
}

}  // namespace
