// session_options.custom_ops_library: an ONNX Runtime custom-op library registered in a model's
// sessions (src/ort/session_options.cpp), from genai_config.json (relative to the model folder)
// or from the user's options. The library is a real one built by this project
// (custom_ops/scale_op.cpp: ebb.test.Scale), and the model a copy of llama-tiny-fp32 whose logits
// pass through that op (tools/custom_op_model.py), so the model cannot load without it.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "runtime/model_folder_check.h"
#include "test_env.h"

#ifndef EBB_TEST_CUSTOM_OPS_LIB
#error "EBB_TEST_CUSTOM_OPS_LIB (the path of libebb_test_custom_ops.so) must be defined"
#endif

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* kLibName = "libebb_test_custom_ops.so";

fs::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

using testing::TempDir;

// Writes a copy of the tiny model whose logits go through ebb.test.Scale(factor), with the
// library copied into the folder and named relatively in its genai_config.json.
fs::path ScaledModel(const TempDir& d, const std::string& name, double factor,
                     const std::string& op_type = "Scale") {
  const fs::path out = d.path() / name;
  const std::string cmd = "timeout 120 /usr/bin/python3 " + std::string(EBB_SOURCE_DIR) +
                          "/tools/custom_op_model.py " + Tiny().string() + " " + out.string() +
                          " " + kLibName + " " + std::to_string(factor) + " " + op_type;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::copy_file(EBB_TEST_CUSTOM_OPS_LIB, out / kLibName);
  return out;
}

// Sets (or, with nullptr, removes) the folder's model.decoder.session_options.custom_ops_library.
void SetConfigLibrary(const fs::path& model, const nlohmann::json& value) {
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(model / "genai_config.json"));
  auto& so = cfg["model"]["decoder"]["session_options"];
  if (value.is_null()) {
    so.erase("custom_ops_library");
  } else {
    so["custom_ops_library"] = value;
  }
  std::ofstream(model / "genai_config.json") << cfg.dump(2);
}

std::vector<int32_t> Greedy(const std::shared_ptr<Model>& model) {
  GeneratorParams p;
  p.max_length = 16;
  Generator g(model, p);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42});
  while (!g.done()) g.GenerateNextToken();
  const auto s = g.sequence(0);
  return {s.begin(), s.end()};
}

// How many times ebb.test.Scale computed in this process: the library ORT loaded, looked up by
// its path (RTLD_NOLOAD: the handle ORT holds, never a second copy).
uint64_t ScaleCalls(const fs::path& lib) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return 0;
  using Fn = uint64_t (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(h, "EbbTestScaleCalls"));
  const uint64_t n = fn != nullptr ? fn() : 0;
  dlclose(h);
  return n;
}

template <typename F>
std::string ErrorOf(F&& f, ErrorCode* code) {
  try {
    f();
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "expected an ebb::Error";
  return "";
}

TEST(CustomOpsLibrary, AModelThatNeedsTheOpRunsWithTheLibraryItsConfigNames) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  const auto want = Greedy(ebb::LoadModel(Tiny()));
  auto model = ebb::LoadModel(m);
  const uint64_t before = ScaleCalls(m / kLibName);
  EXPECT_EQ(Greedy(model), want) << "Scale(factor=1) must not change the greedy tokens";
  EXPECT_GE(ScaleCalls(m / kLibName), before + 13) << "one Scale per step: prefill + 12 decodes";
}

TEST(CustomOpsLibrary, EbbInfoOpensTheGraphWithTheLibraryAndNamesIt) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  const auto r = testing::RunCli("info " + m.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("custom ops: " + (m / kLibName).string()));
  // Issue 28: the kernel line names the op and its library, in `ebb info` and once loaded.
  const std::string op_line = std::string("ebb.test.Scale x1: custom op (") + kLibName + ")";
  EXPECT_THAT(r.out, HasSubstr(op_line));
  EXPECT_THAT(ebb::LoadModel(m)->info().kernels, HasSubstr(op_line));
  const auto j = testing::RunCli("info " + m.string() + " --json");
  ASSERT_EQ(j.status, 0) << j.out;
  EXPECT_EQ(nlohmann::json::parse(j.out)["model"]["custom_ops_library"], (m / kLibName).string());
  const auto plain = testing::RunCli("info " + Tiny().string() + " --json");
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_TRUE(nlohmann::json::parse(plain.out)["model"]["custom_ops_library"].is_null());
}

TEST(CustomOpsLibrary, TheOpReallyComputesANegativeFactorChangesTheTokens) {
  TempDir d;
  const fs::path m = ScaledModel(d, "negated", -1.0);
  EXPECT_NE(Greedy(ebb::LoadModel(m)), Greedy(ebb::LoadModel(Tiny())))
      << "with logits * -1 greedy picks the least likely token";
}

TEST(CustomOpsLibrary, WithoutTheLibraryTheLoadFailsNamingTheOp) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  SetConfigLibrary(m, nullptr);
  ErrorCode code = ErrorCode::Internal;
  const std::string msg = ErrorOf([&] { ebb::LoadModel(m); }, &code);
  EXPECT_EQ(code, ErrorCode::InvalidArgument) << msg;
  EXPECT_THAT(msg, HasSubstr("Scale")) << "ORT names the op it lacks";
  EXPECT_THAT(msg, HasSubstr("custom_ops_library")) << "and ebb names the way to give it";
}

TEST(CustomOpsLibrary, AMissingLibraryIsRefusedNamingThePathAndTheFix) {
  TempDir d;
  for (const std::string where : {"config", "option"}) {
    ModelOptions o;
    fs::path model = Tiny();
    const std::string missing = (d.path() / "nope" / "libmissing.so").string();
    if (where == "config") {
      model = ScaledModel(d, "scaled-" + where, 1.0);
      fs::remove(model / kLibName);
    } else {
      o.Set("session_options.custom_ops_library", missing);
    }
    ErrorCode code = ErrorCode::Internal;
    const std::string msg = ErrorOf([&] { ebb::LoadModel(model, o); }, &code);
    EXPECT_EQ(code, ErrorCode::InvalidArgument) << where << ": " << msg;
    EXPECT_THAT(msg, HasSubstr("custom_ops_library")) << where;
    EXPECT_THAT(msg, HasSubstr(where == "config" ? (model / kLibName).string() : missing))
        << where << ": the path, resolved against the model folder for the config";
    EXPECT_THAT(msg, HasSubstr("RegisterCustomOps")) << where << ": what the file must be";
  }
}

TEST(CustomOpsLibrary, ALibraryWithoutTheGraphsOpIsNamedInTheError) {
  TempDir d;
  const fs::path m = ScaledModel(d, "missing-op", 1.0, "NoSuchOp");
  ErrorCode code = ErrorCode::Internal;
  const std::string msg = ErrorOf([&] { ebb::LoadModel(m); }, &code);
  EXPECT_EQ(code, ErrorCode::InvalidArgument) << msg;
  EXPECT_THAT(msg, HasSubstr("NoSuchOp"));
  EXPECT_THAT(msg, HasSubstr("nor the custom-op library " + (m / kLibName).string()));
}

TEST(CustomOpsLibrary, NoneInTheConfigMeansNoLibrary) {
  TempDir d;
  const fs::path m = d.path() / "tiny";
  fs::copy(Tiny(), m, fs::copy_options::recursive);
  SetConfigLibrary(m, "none");
  EXPECT_EQ(Greedy(ebb::LoadModel(m)), Greedy(ebb::LoadModel(Tiny())));
}

// ebb serve's model folders are confined (docs/http_api.md#security-model): a config may name a
// library inside its folder, never one outside it (that would load code from anywhere).
TEST(CustomOpsLibrary, AServedFolderMayNameOnlyALibraryInsideIt) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  EXPECT_NO_THROW(internal::CheckModelFolderConfined(m));
  for (const std::string outside : {EBB_TEST_CUSTOM_OPS_LIB, "../libx.so"}) {
    SetConfigLibrary(m, outside);
    ErrorCode code = ErrorCode::Internal;
    const std::string msg = ErrorOf([&] { internal::CheckModelFolderConfined(m); }, &code);
    EXPECT_EQ(code, ErrorCode::InvalidArgument) << outside;
    EXPECT_THAT(msg, HasSubstr("custom_ops_library")) << msg;
    EXPECT_THAT(msg, HasSubstr("outside the folder")) << msg;
  }
}

// On the command line a relative path is the working directory's (never a library search).
TEST(CustomOpsLibrary, ARelativePathOnTheCommandLineIsTheWorkingDirectorys) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  SetConfigLibrary(m, nullptr);
  const std::string gen = " generate " + m.string() + " --input-ids 5,17,42 --max-length 8" +
                          " --session-option custom_ops_library=" + kLibName;
  // RunCli runs `ebb ARGS`: a --version first, so that the generate runs in another folder.
  const auto here =
      testing::RunCli("--version >/dev/null; cd " + m.string() + " && " + testing::CliPath() + gen);
  EXPECT_EQ(here.status, 0) << here.out;
  const auto elsewhere = testing::RunCli("--version >/dev/null; cd " + d.path().string() + " && " +
                                         testing::CliPath() + gen);
  EXPECT_NE(elsewhere.status, 0) << elsewhere.out;
  EXPECT_THAT(elsewhere.out, HasSubstr((d.path() / kLibName).string()))
      << "the resolved path, in the working directory";
}

TEST(CustomOpsLibrary, AFileThatIsNotALibraryIsRefusedWithORTsReason) {
  ModelOptions o;
  o.Set("session_options.custom_ops_library", (Tiny() / "genai_config.json").string());
  ErrorCode code = ErrorCode::Internal;
  const std::string msg = ErrorOf([&] { ebb::LoadModel(Tiny(), o); }, &code);
  EXPECT_EQ(code, ErrorCode::InvalidArgument) << msg;
  EXPECT_THAT(msg, HasSubstr("could not register it"));
  EXPECT_THAT(msg, HasSubstr("genai_config.json"));
}

TEST(CustomOpsLibrary, TheLibraryFromTheCommandLineRunsTheModel) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  SetConfigLibrary(m, nullptr);
  const std::string base = "generate " + m.string() + " --input-ids 5,17,42 --max-length 8";
  const auto ok =
      testing::RunCli(base + " --session-option custom_ops_library=" + (m / kLibName).string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  const auto bad =
      testing::RunCli(base + " --session-option custom_ops_library=" + (m / "libnope.so").string());
  EXPECT_NE(bad.status, 0) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("libnope.so"));
}

// The compiled-model cache builds and checks its entry in sessions with the same options, so a
// model with custom ops gets an entry and loads from it with the same tokens.
TEST(CustomOpsLibrary, TheModelCacheBuildsAndLoadsAnEntryForAModelWithCustomOps) {
  TempDir d;
  const fs::path m = ScaledModel(d, "scaled", 1.0);
  const auto want = Greedy(ebb::LoadModel(Tiny()));
  ModelOptions o;
  o.Set("model_cache.dir", (d.path() / "cache").string());
  { EXPECT_EQ(Greedy(ebb::LoadModel(m, o)), want); }  // the entry is built before the model goes
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(d.path() / "cache")) {
    entries += e.is_directory() && e.path().filename().string().rfind(".", 0) != 0;
  }
  EXPECT_EQ(entries, 1u) << "one entry for the custom-op model";
  auto model = ebb::LoadModel(m, o);
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  EXPECT_EQ(Greedy(model), want);
}

}  // namespace
}  // namespace ebb
