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

using RunResult = ebb::testing::CliResult;
RunResult RunEbb(const std::string& args) { return ebb::testing::RunCli(args); }

TEST(Cli, VersionShowsOrtAndCpuProvider) {
  const RunResult r = RunEbb("--version");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("ebb 0."));
  EXPECT_THAT(r.out, HasSubstr("onnxruntime 1.30.0"));
  EXPECT_THAT(r.out, HasSubstr("CPUExecutionProvider"));
}

TEST(Cli, InfoOnMissingFolderIsAClearError) {
  const RunResult r = RunEbb("info /nonexistent/model");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("error: no model folder at /nonexistent/model"));
}

TEST(Cli, UnknownSubcommandFails) {
  const RunResult r = RunEbb("frobnicate");
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("frobnicate"));
}

TEST(Cli, TokenizeAndDetokenizeTheGpt2Tokenizer) {
  const auto dir = ebb::testing::SharedDir() / "models/tiny-random-gpt2-fp32";
  EBB_SKIP_UNLESS_EXISTS(dir);
  const std::string d = dir.string();
  RunResult r = RunEbb("tokenize " + d + " --text 'Hello world'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "15496 995\n");
  r = RunEbb("tokenize " + d +
             " --jsonl <<'EOF'\n{\"text\": \"This is a test.\"}\n{\"text\": \" Hello\"}\nEOF");
  EXPECT_EQ(r.out, "{\"ids\":[1212,318,257,1332,13]}\n{\"ids\":[18435]}\n");
  r = RunEbb("detokenize " + d + " --ids 15496,995");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("Hello world"));
  r = RunEbb("detokenize " + d + " --ids 1,x");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("error: --ids"));
  r = RunEbb("tokenize /nonexistent --text hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("not found"));
}

TEST(Cli, GeneratePromptUsesTheTokenizerAndJsonHasTextAndMemory) {
  const auto dir = ebb::testing::TestModelsDir() / "llama-tiny-fp32";
  RunResult r =
      RunEbb("generate " + dir.string() + " --prompt 'Hello world' --max-length 24 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* key : {"\"sequences\"", "\"text\"", "\"memory\"", "\"cpu_arena\"", "\"ttft_ms\"",
                          "\"decode_tokens_per_s\""}) {
    EXPECT_THAT(r.out, HasSubstr(key));
  }
  r = RunEbb("generate " + dir.string() + " --prompt 'x' --input-ids 1,2");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("exactly one of --prompt or --input-ids"));
  r = RunEbb("generate " + dir.string() + " --input-ids 1,2 --option kv_cache.mdoe=static");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("did you mean 'kv_cache.mode'"));
}

}  // namespace
