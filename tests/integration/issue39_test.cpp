// Issue 39 (hardening, round 3), the library side: every option path checks run-option typos
// the same way (item 5), and a cleared run option goes back to its load-time value, with the
// value in force and its source visible (item 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ebb/ebb.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/log.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/runtime.h"
#include "log_capture.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

constexpr const char* kTypo = "memory.enable_memory_arena_shrinkag";
constexpr const char* kHint = "did you mean 'memory.enable_memory_arena_shrinkage'";

using testing::LogCapture;

// A copy of the tiny model whose genai_config.json has `run_options`.
fs::path WithConfigRunOptions(const testing::TempDir& d, const nlohmann::json& run_options) {
  const fs::path m = d.path() / "m";
  fs::copy(Tiny(), m, fs::copy_options::recursive);
  nlohmann::json cfg;
  {
    std::ifstream in(m / "genai_config.json");
    in >> cfg;
  }
  cfg["model"]["decoder"]["run_options"] = run_options;
  std::ofstream(m / "genai_config.json") << cfg.dump(2);
  return m;
}

TEST(Issue39, MisspelledLoadTimeRunOptionWarnsDidYouMeanInCpp) {
  LogCapture logs(LogLevel::Warn);
  ModelOptions o;
  o.Set(std::string("run_options.") + kTypo, "cpu:0");
  auto m = ebb::LoadModel(Tiny(), o);
  EXPECT_THAT(logs.Text(), HasSubstr(kHint));
}

TEST(Issue39, MisspelledLoadTimeRunOptionWarnsDidYouMeanThroughTheCAbi) {
  LogCapture logs(LogLevel::Warn);
  ebb_runtime* rt = nullptr;
  ASSERT_EQ(ebb_runtime_create(nullptr, &rt), nullptr);
  ebb_model_options* o = nullptr;
  ASSERT_EQ(ebb_model_options_create(&o), nullptr);
  ASSERT_EQ(ebb_model_options_set(o, (std::string("run_options.") + kTypo).c_str(), "cpu:0"),
            nullptr);
  ebb_model* model = nullptr;
  ebb_error* err = ebb_runtime_load(rt, "tiny", Tiny().c_str(), o, &model);
  EXPECT_EQ(err, nullptr);
  if (err != nullptr) ebb_error_free(err);
  EXPECT_THAT(logs.Text(), HasSubstr(kHint));
  ebb_model_free(model);
  ebb_model_options_free(o);
  ebb_runtime_free(rt);
}

TEST(Issue39, MisspelledRunOptionInGenaiConfigWarnsDidYouMean) {
  testing::TempDir d("issue39");
  LogCapture logs(LogLevel::Warn);
  auto m = ebb::LoadModel(WithConfigRunOptions(d, {{kTypo, "cpu:0"}}));
  EXPECT_THAT(logs.Text(), HasSubstr(kHint));
}

TEST(Issue39, AnEbbKeyThatIsNotARunOptionInGenaiConfigFailsTheLoadNamingTheFile) {
  testing::TempDir d("issue39");
  try {
    ebb::LoadModel(WithConfigRunOptions(d, {{"kv_cache.max_bytes", "1MiB"}}));
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("genai_config.json's run_options"));
    EXPECT_THAT(e.what(), HasSubstr("not a run option"));
  }
}

TEST(Issue39, ClearRunOptionRestoresTheLoadTimeValueAndInForceNamesTheSource) {
  testing::TempDir d("issue39");
  ModelOptions o;
  o.Set("prefix_cache.max_bytes", "8MiB");
  o.Set("run_options.memory.enable_memory_arena_shrinkage", "cpu:0");
  auto m = ebb::LoadModel(
      WithConfigRunOptions(d, {{"disable_synchronize_execution_providers", "1"}}), o);
  ModelControls& h = m->runtime();
  auto in_force = h.OptionsInForce();
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].value, std::to_string(8u << 20));
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].source, "load");
  EXPECT_EQ(in_force["memory.enable_memory_arena_shrinkage"].source, "load");
  EXPECT_EQ(in_force["disable_synchronize_execution_providers"].source, "load");
  EXPECT_EQ(in_force["memory.shrink_every"].source, "default");

  h.SetRunOption("prefix_cache.max_bytes", "1MiB");
  h.SetRunOption("memory.enable_memory_arena_shrinkage", "");
  h.ShrinkEvery(4);
  h.SetRunOption("log_severity_level", "3");
  in_force = h.OptionsInForce();
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].value, std::to_string(1u << 20));
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].source, "runtime");
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].at_load, std::to_string(8u << 20));
  EXPECT_EQ(in_force["memory.shrink_every"].value, "4");
  EXPECT_EQ(in_force["memory.shrink_every"].source, "runtime");
  EXPECT_EQ(h.Stats().prefix_cache.max_bytes, 1u << 20);

  // null on HTTP, ebb_model_clear_run_option in C, clear_option in Python: the load-time value.
  for (const char* k : {"prefix_cache.max_bytes", "memory.enable_memory_arena_shrinkage",
                        "memory.shrink_every", "log_severity_level"}) {
    h.ClearRunOption(k);
  }
  in_force = h.OptionsInForce();
  EXPECT_EQ(h.Stats().prefix_cache.max_bytes, 8u << 20);
  EXPECT_EQ(in_force["prefix_cache.max_bytes"].source, "load");
  EXPECT_EQ(in_force["memory.enable_memory_arena_shrinkage"].value, "cpu:0");
  EXPECT_EQ(in_force["memory.shrink_every"].value, "0");
  EXPECT_EQ(in_force.count("log_severity_level"), 0u) << "set after the load: cleared, unset";
  EXPECT_EQ(h.Options().count("log_severity_level"), 0u);
  EXPECT_EQ(h.Options().at("memory.enable_memory_arena_shrinkage"), "cpu:0");
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

TEST(Issue39, ATokenizerWithIdsPastTheGraphsVocabularyIsFoundAtLoadNamingBothSizes) {
  testing::TempDir d("issue39");
  const fs::path m = d.path() / "m";
  fs::copy(Tiny(), m, fs::copy_options::recursive);
  nlohmann::json tok;
  {
    std::ifstream in(m / "tokenizer.json");
    in >> tok;
  }
  tok["added_tokens"].push_back({{"id", 2047},
                                 {"content", "<|beyond|>"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", true}});
  std::ofstream(m / "tokenizer.json") << tok.dump();
  LogCapture logs(LogLevel::Warn);
  auto model = ebb::LoadModel(m);  // said at load, not refused (tiny-random models do this)
  const std::string said = logs.Text();
  EXPECT_THAT(said, HasSubstr("but the model's vocabulary (genai_config.json's vocab_size, the "
                              "graph's logits) has 1024"));
  EXPECT_THAT(said, HasSubstr("tokens)"));
  // A prompt with that token is refused per request, clearly, and the model stays usable.
  GenerateRequest req;
  req.prompt = "<|beyond|>";
  req.max_new_tokens = 1;
  EXPECT_THROW(Generate(model, req), Error);
  req.prompt = "hello";
  EXPECT_EQ(Generate(model, req).rows.at(0).generated_ids.size(), 1u);
}

TEST(Issue39, CustomOpsLibraryThatIsAFolderOrADeviceSaysSo) {
  for (const auto& [path, says] : {std::pair<std::string, std::string>{"/tmp", "is a folder"},
                                   {"/dev/zero", "not a regular file"},
                                   {"/nonexistent/lib.so", "no such file"}}) {
    ModelOptions o;
    o.Set("session_options.custom_ops_library", path);
    try {
      ebb::LoadModel(Tiny(), o);
      ADD_FAILURE() << path << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << path;
      EXPECT_THAT(e.what(), HasSubstr(says)) << path;
    }
  }
}

}  // namespace
}  // namespace ebb

namespace ebb {
namespace {

TEST(Issue39, MaxNewTokensWithoutMaxLengthBoundsTheKvToPromptPlusNewTokens) {
  auto m = ebb::LoadModel(Tiny());  // genai_config.json's max_length: 2048
  GenerateRequest req;
  req.input_ids = {{1, 2, 3, 4}};
  req.max_new_tokens = 2;
  const GenerateResult r = Generate(m, req);
  EXPECT_EQ(r.max_length, 6);
  EXPECT_EQ(r.rows.at(0).generated_ids.size(), 2u);
  // A static KV of 6 positions (rounded to whole pages), not 2048.
  const MemoryStats st = m->runtime().Stats();
  EXPECT_GT(st.kv.peak_in_use_bytes, 0u);
  EXPECT_LT(st.kv.peak_in_use_bytes, 64 * m->info().kv_bytes_per_token) << st.kv.peak_in_use_bytes;
  // An explicit max_length still wins.
  req.params.max_length = 64;
  EXPECT_EQ(Generate(m, req).max_length, 64);
}

}  // namespace
}  // namespace ebb
