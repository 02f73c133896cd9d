// Issue 24, items 6, 7 and 9 (findings 17, 19 and 20), each pinned at the library and CLI:
//   - chat on a model without a chat template is a clear InvalidArgument naming the fixes, and
//     the chat_template load option (a Jinja file or its text) gives it one; a bad template fails
//     the load naming the file, line and column;
//   - ModelManager::CheckModels (what `ebb serve` runs at start) refuses a provider option this
//     CPU-only ONNX Runtime cannot serve, and a template that does not parse;
//   - messages: a NUL in a model id no longer cuts the message; a non-UTF-8 run option key is
//     refused when it is set (ModelOptions::Set), not later by a JSON dump.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/model.h"
#include "ebb/model_manager.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Renders plain text (no special tokens, which decoded text skips): "USER: hi\nASSISTANT:".
const char* const kTemplate =
    "{% for m in messages %}{{ m['role'] | upper }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}";
const char* const kRendered = "USER: hi\nASSISTANT:";

fs::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

// A temporary folder, removed with the test.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("ebb-issue24-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A copy of the tiny llama whose tokenizer_config.json has no chat_template.
fs::path CopyWithoutTemplate(const fs::path& dir) {
  const fs::path m = dir / "no-template";
  fs::copy(Tiny(), m, fs::copy_options::recursive);
  nlohmann::json cfg;
  {
    std::ifstream in(m / "tokenizer_config.json");
    in >> cfg;
  }
  cfg.erase("chat_template");
  std::ofstream(m / "tokenizer_config.json", std::ios::trunc) << cfg.dump();
  return m;
}

void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

GenerateRequest ChatRequest() {
  GenerateRequest req;
  req.messages = {{"user", "hi"}};
  req.max_new_tokens = 3;
  return req;
}

TEST(Issue24ChatTemplate, ChatWithoutATemplateIsInvalidArgumentNamingTheFix) {
  TempDir tmp("none");
  auto m = ebb::LoadModel(CopyWithoutTemplate(tmp.path()));
  EXPECT_FALSE(m->has_chat_template());
  try {
    Generate(m, ChatRequest());
    FAIL() << "chat without a template ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("has no chat template"));
    EXPECT_THAT(e.what(), HasSubstr("chat_template=FILE"));
    EXPECT_THAT(e.what(), HasSubstr("--chat-template FILE"));
    EXPECT_THAT(e.what(), HasSubstr("plain prompt"));
  }
  GenerateRequest prompt;
  prompt.prompt = "hi";
  prompt.max_new_tokens = 2;
  EXPECT_EQ(Generate(m, prompt).usage.completion_tokens, 2u) << "a plain prompt still runs";
}

TEST(Issue24ChatTemplate, TheLoadOptionTakesAFileOrTheTextAndRendersWithIt) {
  TempDir tmp("file");
  const fs::path folder = CopyWithoutTemplate(tmp.path());
  const fs::path file = tmp.path() / "t.jinja";
  WriteFile(file, kTemplate);
  const auto tok = Tokenizer::FromFile(folder / "tokenizer.json");
  const std::vector<int32_t> want = tok->Encode(kRendered, false);
  for (const std::string& value : {file.string(), std::string(kTemplate)}) {
    ModelOptions mo;
    mo.Set("chat_template", value);
    auto m = ebb::LoadModel(folder, mo);
    EXPECT_TRUE(m->has_chat_template());
    EXPECT_EQ(m->chat_template().Render({{"user", "hi"}}, true), kRendered);
    const GenerateResult r = Generate(m, ChatRequest());
    ASSERT_FALSE(r.error) << r.error->what();
    EXPECT_EQ(r.rows[0].prompt_ids, want) << value;
  }
  // It replaces a folder's own template too.
  ModelOptions mo;
  mo.Set("chat_template", file.string());
  auto m = ebb::LoadModel(Tiny(), mo);
  EXPECT_EQ(m->chat_template().Render({{"user", "hi"}}, true), kRendered);
}

TEST(Issue24ChatTemplate, ABadTemplateFailsTheLoadNamingTheFileLineAndColumn) {
  TempDir tmp("bad");
  const fs::path file = tmp.path() / "broken.jinja";
  WriteFile(file, "line one\n{% for m in messages %}{{ m.content }\n");
  Runtime rt;
  ModelOptions mo;
  mo.Set("chat_template", file.string());
  try {
    rt.Load("bad", Tiny(), mo);
    FAIL() << "loaded a template that does not parse";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(file.string() + ":2:"));  // the renderer's line:column
  }
  EXPECT_FALSE(rt.Contains("bad"));
  ModelOptions missing;
  missing.Set("chat_template", (tmp.path() / "nowhere.jinja").string());
  try {
    rt.Load("missing", Tiny(), missing);
    FAIL() << "loaded a missing template file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("nowhere.jinja: no such file"));
  }
  ModelOptions inline_bad;
  inline_bad.Set("chat_template", "{% if %}");
  EXPECT_THROW(rt.Load("inline", Tiny(), inline_bad), Error);
  EXPECT_THROW(ModelOptions().Set("chat_template", " "), Error) << "an empty value names nothing";
}

// `ebb generate` and `ebb run --local` take --chat-template; without one the error names it.
TEST(Issue24ChatTemplate, TheCliTakesChatTemplateAndNamesItWhenThereIsNone) {
  TempDir tmp("cli");
  const fs::path folder = CopyWithoutTemplate(tmp.path());
  const fs::path file = tmp.path() / "t.jinja";
  WriteFile(file, kTemplate);
  const fs::path chat = tmp.path() / "chat.json";
  WriteFile(chat, R"([{"role": "user", "content": "hi"}])");
  const std::string gen =
      "generate " + folder.string() + " --messages " + chat.string() + " --max-new-tokens 2 --json";
  const auto none = testing::RunCli(gen);
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_THAT(none.out, HasSubstr("has no chat template"));
  EXPECT_THAT(none.out, HasSubstr("--chat-template FILE"));
  const auto with = testing::RunCli(gen + " --chat-template " + file.string());
  EXPECT_EQ(with.status, 0) << with.out;
  EXPECT_THAT(with.out, HasSubstr("USER: hi\\nASSISTANT:"));  // as JSON writes it

  const std::string run = "run " + folder.string() + " hi --local --max-tokens 2";
  const auto run_none = testing::RunCli(run);
  EXPECT_EQ(run_none.status, 1) << run_none.out;
  EXPECT_THAT(run_none.out, HasSubstr("--chat-template FILE"));
  const auto run_with = testing::RunCli(run + " --chat-template " + file.string());
  EXPECT_EQ(run_with.status, 0) << run_with.out;
  const auto chat_with =
      testing::RunCli("chat " + folder.string() + " --local --max-tokens 2 --chat-template " +
                      file.string() + " < /dev/null");
  EXPECT_EQ(chat_with.status, 0) << chat_with.out;

  WriteFile(file, "{{ oops");
  const auto bad = testing::RunCli(gen + " --chat-template " + file.string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.out, HasSubstr(file.string() + ":1:"));
}

// Finding 19: what `ebb serve` checks at start (ModelManager::CheckModels).
TEST(Issue24CheckModels, AProviderThisBuildLacksOrABadTemplateNeverLoadsSoStartFails) {
  TempDir tmp("check");
  Runtime rt;
  {
    ModelManagerOptions o;
    o.models["gpu"].path = Tiny();
    o.models["gpu"].options = {{"provider_options.cuda.gpu_mem_limit", "1073741824"}};
    ModelManager m(rt, o);
    try {
      m.CheckModels();
      FAIL() << "a CUDA provider option passed the check on a CPU-only ONNX Runtime";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unavailable) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("model 'gpu' can never load"));
      EXPECT_THAT(e.what(), HasSubstr("provider_options.cuda asks for the execution provider"));
    }
    EXPECT_FALSE(rt.Contains("gpu")) << "the check loads nothing";
  }
  {
    // execution_provider=cpu replaces the list: the CUDA options are not used, and it passes.
    ModelManagerOptions o;
    o.models["cpu"].path = Tiny();
    o.models["cpu"].options = {{"provider_options.cuda.gpu_mem_limit", "1073741824"},
                               {"execution_provider", "cpu"}};
    EXPECT_NO_THROW(ModelManager(rt, o).CheckModels());
  }
  {
    // Folders under models_dir are found on use: the default options are checked.
    ModelManagerOptions o;
    o.models_dir = testing::TestModelsDir();
    o.defaults = {{"execution_provider", "cuda"}};
    try {
      ModelManager(rt, o).CheckModels();
      FAIL() << "--ep cuda passed the check on a CPU-only ONNX Runtime";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unavailable);
      EXPECT_THAT(e.what(), HasSubstr("with the default options can never load"));
      EXPECT_THAT(e.what(), HasSubstr("execution_provider=cuda"));
    }
  }
  {
    const fs::path file = tmp.path() / "t.jinja";
    WriteFile(file, "{% for %}");
    ModelManagerOptions o;
    o.models["chat"].path = Tiny();
    o.models["chat"].options = {{"chat_template", file.string()}};
    try {
      ModelManager(rt, o).CheckModels();
      FAIL() << "a template that does not parse passed the check";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("model 'chat' can never load"));
      EXPECT_THAT(e.what(), HasSubstr(file.string() + ":1:"));
    }
  }
  {
    ModelManagerOptions o;
    o.models_dir = testing::TestModelsDir();
    o.models["tiny"].path = Tiny();
    EXPECT_NO_THROW(ModelManager(rt, o).CheckModels()) << "nothing to refuse";
  }
}

// Finding 20 / 16a: the arena strategy is shown by the name users write, not ORT's enum value
// ("arena_extend_strategy=1"), also where two models ask for different process-wide arenas.
TEST(Issue24Messages, TheArenaStrategyIsShownByName) {
  RuntimeOptions ro;
  ro.Set("arena_extend_strategy", "kSameAsRequested");
  Runtime rt(ro);
  ModelOptions shared;
  shared.Set("session_options.use_env_allocators", "1");
  auto m = rt.Load("m", Tiny(), shared);
  ModelOptions other;
  other.Set("session_options.arena_extend_strategy", "kNextPowerOfTwo");
  try {
    rt.Load("x", Tiny(), other);
    FAIL() << "loaded a second arena configuration";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("arena_extend_strategy=kSameAsRequested"));
    EXPECT_THAT(e.what(), HasSubstr("arena_extend_strategy=kNextPowerOfTwo"));
    EXPECT_THAT(e.what(), Not(HasSubstr("arena_extend_strategy=1")));
  }
}

// Finding 20: a NUL in an id cut the message (what() is a C string), and with it the fix.
TEST(Issue24Messages, ANulInAModelIdIsEscapedNotCut) {
  Runtime rt;
  const std::string id("a\0b", 3);
  try {
    rt.Load(id, Tiny());
    FAIL() << "loaded under an id with a NUL";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("'a\\x00b' is not valid"));
    EXPECT_THAT(msg, HasSubstr("letters, digits"));
  }
  for (auto call : {+[](Runtime&r, const std::string&i) { r.Get(i); },
                    +[](Runtime&r, const std::string&i) { r.Unload(i); }}) {
    try {
      call(rt, id);
      ADD_FAILURE() << "found a model under an id with a NUL";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::NotFound);
      EXPECT_THAT(std::string(e.what()), HasSubstr("'a\\x00b' is loaded"));
    }
  }
}

// Finding 20: a non-UTF-8 run option key given at load was accepted, and the model's run
// options could then not be shown (ebb_model_run_options_json: internal); refused at Set now.
TEST(Issue24Messages, ANonUtf8RunOptionKeyIsRefusedWhenItIsSet) {
  ModelOptions mo;
  try {
    mo.Set("run_options.bad\xff", "1");
    FAIL() << "accepted a non-UTF-8 run option key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("bad\\xff"));
    EXPECT_THAT(e.what(), HasSubstr("not valid UTF-8"));
  }
  EXPECT_THROW(mo.Set("run_options.k", "\xc3"), Error) << "nor a non-UTF-8 value";
  EXPECT_THROW(mo.Set("run_options." + std::string(1025, 'k'), "1"), Error);
  EXPECT_TRUE(mo.run_options.empty());
  mo.Set("run_options.memory.enable_memory_arena_shrinkage", "cpu:0");
  EXPECT_EQ(mo.run_options.size(), 1u);
}

}  // namespace
}  // namespace ebb
