// `ebb generate` end to end: llama2.c's stories260K reproduced byte for byte, long inputs from
// files and stdin, and what the CLI keeps when a request ends early (a KV budget refusal, a
// token the tokenizer cannot decode, SIGINT/SIGTERM).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ebb/tokenizer.h"
#include "test_env.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Split {
  int status = -1;
  std::string out;  // stdout only
  std::string err;  // stderr only
};

fs::path TempPath(const std::string& name) {
  return fs::temp_directory_path() / ("ebb-cli-generate-" + std::to_string(getpid()) + "-" + name);
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the CLI with `args` (a shell fragment), keeping stdout and stderr apart.
Split RunSplit(const std::string& args) {
  Split r;
  const fs::path err = TempPath("stderr");
  const std::string cmd = ebb::testing::CliPath() + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = ReadAll(err);
  fs::remove(err);
  return r;
}

nlohmann::json ParseJson(const std::string& s) {
  try {
    return nlohmann::json::parse(s);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << s;
    return {};
  }
}

const fs::path kStories = ebb::testing::SharedDir() / "models/stories260k";
const fs::path kLlama = ebb::testing::TestModelsDir() / "llama-tiny-fp32";

// llama2.c's run.c -t 0 output (../shared/models/README.md).
const char* const kDogText =
    "Once upon a time, a dog named Max was very excited. He was very excited to";
const char* const kDogIds = "1,403,407,261,378,432,261,400,428";
const char* const kEmptyText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's "
    "mom "
    "said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do. She said, \"I "
    "want to play with your ball, but I can't find it.\"\nLily was sad and didn't know what to do. "
    "She said, \"I'm sorry, Lily. I didn't know what to do.\"\nLily didn't want to help her mom, "
    "so "
    "she said, \"I'm sorry, mom. I didn't know what to do.\" Her mom said, \"Don't worry, Lily. We "
    "can help you";

class Stories260k : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories260k, PromptStreamsLlama2cTextByteForByte) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const Split r =
      RunSplit("generate " + kStories.string() +
               " --prompt 'Once upon a time, a dog' --max-length 30 --kv-cache " + GetParam());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kDogText) + "\n");
}

TEST_P(Stories260k, PromptJsonHasTheTextFinishReasonAndUsage) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const Split r = RunSplit(
      "generate " + kStories.string() +
      " --prompt 'Once upon a time, a dog' --max-length 30 --json --kv-cache " + GetParam());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = ParseJson(r.out);
  EXPECT_EQ(j["text"][0], kDogText);
  EXPECT_EQ(j["completion"][0], " named Max was very excited. He was very excited to");
  EXPECT_EQ(j["finish_reason"][0], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 9);
  EXPECT_EQ(j["usage"]["completion_tokens"], 21);
  EXPECT_EQ(j["sequences"][0].size(), 30u);
  EXPECT_FALSE(j.contains("error"));
}

TEST_P(Stories260k, EmptyPromptIsBosAloneAndStreamsLlama2cText) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const Split r = RunSplit("generate " + kStories.string() +
                           " --input-ids 1 --max-length 256 --kv-cache " + GetParam());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kEmptyText) + "\n");
  const Split j = RunSplit("generate " + kStories.string() +
                           " --input-ids 1 --max-length 256 --json --kv-cache " + GetParam());
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(ParseJson(j.out)["text"][0], kEmptyText);
}

INSTANTIATE_TEST_SUITE_P(KvModes, Stories260k, ::testing::Values("static", "dynamic"));

TEST(Stories260kBatch, EachRowGetsItsOwnText) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  for (const char* mode : {"static", "dynamic"}) {
    const std::string base = "generate " + kStories.string() + " --max-length 30 --json " +
                             "--kv-cache " + mode + " --input-ids ";
    const Split batch = RunSplit(base + "'1;" + kDogIds + "'");
    const Split one = RunSplit(base + "1");
    const Split two = RunSplit(base + kDogIds);
    ASSERT_EQ(batch.status, 0) << batch.err;
    const auto jb = ParseJson(batch.out);
    ASSERT_EQ(jb["text"].size(), 2u);
    EXPECT_EQ(ParseJson(two.out)["text"][0], kDogText);
    EXPECT_EQ(jb["text"][0], ParseJson(one.out)["text"][0]) << mode;
    EXPECT_EQ(jb["text"][1], kDogText) << mode;
  }
}

TEST(Stories260kFlags, StopStringsAndMaxNewTokens) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const std::string base =
      "generate " + kStories.string() + " --prompt 'Once upon a time, a dog' --max-length 30 ";
  // " was" spans tokens; the stop string and what follows are not printed.
  const Split stop = RunSplit(base + "--stop xyz --stop ' was'");
  ASSERT_EQ(stop.status, 0) << stop.err;
  EXPECT_EQ(stop.out, "Once upon a time, a dog named Max\n");
  const auto j = ParseJson(RunSplit(base + "--stop ' was' --json").out);
  EXPECT_EQ(j["finish_reason"][0], "stop");
  EXPECT_EQ(j["completion"][0], " named Max");
  const auto n = ParseJson(RunSplit(base + "--max-new-tokens 3 --json").out);
  EXPECT_EQ(n["finish_reason"][0], "length");
  EXPECT_EQ(n["usage"]["completion_tokens"], 3);
  EXPECT_EQ(n["sequences"][0].size(), 12u);
}

TEST(CliChat, MessagesGoThroughTheChatTemplate) {
  const fs::path chat = TempPath("chat.json");
  std::ofstream(chat) << R"([{"role": "user", "content": "Hello"}])";
  const Split r = RunSplit("generate " + kLlama.string() + " --messages " + chat.string() +
                           " --max-new-tokens 5 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = ParseJson(r.out);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_THAT(j["text"][0].get<std::string>(), HasSubstr("Hello"));
  // A folder without a chat template: a clear error naming --chat-template (issue 24).
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const Split none = RunSplit("generate " + kStories.string() + " --messages " + chat.string());
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.err, HasSubstr("no chat template"));
  EXPECT_EQ(none.out, "");
  fs::remove(chat);
}

// --- Long inputs never go through argv
// ------------------------------------------------------------

std::string BigPrompt() {
  std::string s;
  while (s.size() < 41 * 1024) s += "The quick brown fox jumps over the lazy dog. ";
  return s;
}

TEST(CliLongInputs, TokenizeTextFileAndStdinTakeA40KbText) {
  const std::string big = BigPrompt();
  const fs::path file = TempPath("big.txt");
  std::ofstream(file, std::ios::binary) << big;
  const auto tok = ebb::Tokenizer::FromFile(kLlama);
  std::string want;
  for (int32_t id : tok->Encode(big, true)) want += (want.empty() ? "" : " ") + std::to_string(id);
  want += "\n";
  const Split from_file = RunSplit("tokenize " + kLlama.string() + " --text-file " + file.string());
  EXPECT_EQ(from_file.status, 0) << from_file.err;
  EXPECT_EQ(from_file.out, want);
  const Split from_stdin =
      RunSplit("tokenize " + kLlama.string() + " --text-file - < " + file.string());
  EXPECT_EQ(from_stdin.out, want);
  fs::remove(file);
}

TEST(CliLongInputs, GeneratePromptFileAndStdinEqualThePromptFlag) {
  const fs::path file = TempPath("prompt.txt");
  std::ofstream(file, std::ios::binary) << "Hello world";
  const std::string base = "generate " + kLlama.string() + " --max-length 24 ";
  const Split flag = RunSplit(base + "--prompt 'Hello world'");
  const Split from_file = RunSplit(base + "--prompt-file " + file.string());
  const Split from_stdin = RunSplit(base + "--prompt-file - < " + file.string());
  ASSERT_EQ(flag.status, 0) << flag.err;
  EXPECT_EQ(from_file.out, flag.out);
  EXPECT_EQ(from_stdin.out, flag.out);
  // --input-ids-file: rows on lines, from a file and from stdin.
  std::ofstream(file, std::ios::binary) << "5,17,42\n8 9 10\n";
  const Split ids_flag = RunSplit(base + "--input-ids '5,17,42;8,9,10' --json");
  const Split ids_file = RunSplit(base + "--input-ids-file " + file.string() + " --json");
  const Split ids_stdin = RunSplit(base + "--input-ids-file - --json < " + file.string());
  ASSERT_EQ(ids_flag.status, 0) << ids_flag.err;
  EXPECT_EQ(ParseJson(ids_file.out)["sequences"], ParseJson(ids_flag.out)["sequences"]);
  EXPECT_EQ(ParseJson(ids_stdin.out)["sequences"], ParseJson(ids_flag.out)["sequences"]);
  fs::remove(file);
}

TEST(CliLongInputs, GenerateReadsA40KbPromptFileWhole) {
  const fs::path file = TempPath("big-prompt.txt");
  const std::string big = BigPrompt();
  std::ofstream(file, std::ios::binary) << big;
  const size_t n_tokens = ebb::Tokenizer::FromFile(kLlama)->Encode(big, true).size();
  // More tokens than the model's context: the whole file arrived, and the error says so.
  const Split r = RunSplit("generate " + kLlama.string() + " --prompt-file " + file.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("the prompt has " + std::to_string(n_tokens) + " tokens"));
  fs::remove(file);
}

// --- The CLI keeps what it has
// ---------------------------------------------------------------------

std::string KvBudgetArgs() {
  return "generate " + kLlama.string() +
         " --input-ids 5,17,42,99,7 --max-length 200 --kv-cache dynamic "
         "--option kv_cache.chunk_tokens=16 --option kv_cache.max_bytes=16KiB";
}

TEST(CliKeepsWhatItHas, KvBudgetRefusalPrintsTheTextThenTheError) {
  const Split r = RunSplit(KvBudgetArgs());
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("error: "));
  EXPECT_THAT(r.err, HasSubstr("kv_cache.max_bytes"));
  ASSERT_TRUE(r.out.ends_with("\n")) << r.out;
  const Split j = RunSplit(KvBudgetArgs() + " --json");
  EXPECT_EQ(j.status, 1);
  const auto o = ParseJson(j.out);
  EXPECT_EQ(o["finish_reason"][0], "error");
  EXPECT_EQ(o["error"]["code"], "resource_exhausted");
  EXPECT_THAT(o["error"]["message"].get<std::string>(), HasSubstr("kv_cache.max_bytes"));
  const std::string completion = o["completion"][0];
  EXPECT_FALSE(completion.empty());
  // The streamed output is the prompt's text followed by the same completion.
  EXPECT_EQ(r.out, o["text"][0].get<std::string>() + "\n");
  EXPECT_GT(o["sequences"][0].size(), 5u);
}

TEST(CliKeepsWhatItHas, TokensTheTokenizerCannotDecodeShowAsReplacementChars) {
  // The model's vocabulary (1024) is larger than this tokenizer's (16 tokens).
  const fs::path dir = TempPath("small-vocab");
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kLlama)) {
    const std::string f = e.path().filename().string();
    if (f != "tokenizer.json" && f != "tokenizer_config.json") {
      fs::create_symlink(fs::absolute(e.path()), dir / f);
    }
  }
  nlohmann::json vocab = nlohmann::json::object();
  for (int i = 0; i < 16; ++i) vocab["t" + std::to_string(i)] = i;
  const nlohmann::json tok = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "t0"}}}};
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  const Split r = RunSplit("generate " + dir.string() + " --input-ids 5,7,9 --max-length 20");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\xEF\xBF\xBD"));
  EXPECT_THAT(r.err, HasSubstr("not in the tokenizer's vocabulary"));
  const Split j =
      RunSplit("generate " + dir.string() + " --input-ids 5,7,9 --max-length 20 --json");
  EXPECT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(ParseJson(j.out)["sequences"][0].size(), 20u);
  fs::remove_all(dir);
}

// Starts the CLI, waits for streamed bytes beyond the prompt's echo, sends `sig`, and returns
// the exit status and all of stdout.
Split InterruptAfterFirstPiece(int sig, const std::string& echo) {
  Split r;
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return r;
  const std::string cli = ebb::testing::CliPath();
  const std::string model = kLlama.string();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    close(out_pipe[0]);
    execl(cli.c_str(), cli.c_str(), "generate", model.c_str(), "--prompt", "Hello", "--max-length",
          "2000", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out_pipe[1]);
  std::array<char, 4096> buf;
  bool sent = false;
  ssize_t n;
  while ((n = read(out_pipe[0], buf.data(), buf.size())) > 0) {
    r.out.append(buf.data(), static_cast<size_t>(n));
    if (!sent && r.out.size() > echo.size()) {
      kill(pid, sig);
      sent = true;
    }
  }
  close(out_pipe[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(CliKeepsWhatItHas, SigintAndSigtermStopAtTheNextStepAndPrintTheText) {
  const auto tok = ebb::Tokenizer::FromFile(kLlama);
  const std::string echo = tok->Decode(tok->Encode("Hello", true), true);
  for (const auto& [sig, code] : {std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}}) {
    const Split r = InterruptAfterFirstPiece(sig, echo);
    EXPECT_EQ(r.status, code) << "signal " << sig << "\n" << r.out;
    EXPECT_THAT(r.out, StartsWith(echo));
    EXPECT_GT(r.out.size(), echo.size() + 1);
    EXPECT_TRUE(r.out.ends_with("\n"));
  }
}

}  // namespace
