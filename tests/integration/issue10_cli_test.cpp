// Regression tests for issue 10's CLI and execution-provider bugs, on the built `ebb`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
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

// A copy of llama-tiny-fp32 whose genai_config.json names `ep` as its execution provider.
class ProviderCopy {
 public:
  explicit ProviderCopy(const std::string& ep) {
    dir_ = fs::temp_directory_path() / ("ebb_ep_" + std::to_string(getpid()) + "_" + ep);
    fs::remove_all(dir_);
    fs::copy(Tiny(), dir_, fs::copy_options::recursive);
    auto cfg = nlohmann::json::parse(std::ifstream(dir_ / "genai_config.json"));
    cfg["model"]["decoder"]["session_options"]["provider_options"] =
        nlohmann::json::array({{{ep, nlohmann::json::object()}}});
    std::ofstream(dir_ / "genai_config.json") << cfg.dump(2);
  }
  ~ProviderCopy() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

// Issue 10, bug 8: the CUDA message named a bootstrap switch (EBB_ORT_GPU=1) that does not exist,
// `dml` was not recognised as DirectML, and a model whose config names a missing EP could not be
// run on CPU.
TEST(ExecutionProviderIssue10, MissingProvidersSayHowToRunOnCpu) {
  for (const std::string ep : {"cuda", "CUDAExecutionProvider", "dml", "DmlExecutionProvider"}) {
    ProviderCopy copy(ep);
    const auto r = testing::RunCli("generate " + copy.dir() + " --input-ids 5,17 --max-length 4");
    EXPECT_EQ(r.status, 1) << ep << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("genai_config.json asks for the execution provider")) << ep;
    EXPECT_THAT(r.out, HasSubstr("--ep cpu")) << ep;
    EXPECT_THAT(r.out, HasSubstr("execution_provider=cpu")) << ep;
    EXPECT_THAT(r.out, Not(HasSubstr("EBB_ORT_GPU"))) << ep;
    if (ep == "dml" || ep == "DmlExecutionProvider") {
      EXPECT_THAT(r.out, HasSubstr("DirectML (dml, DmlExecutionProvider)")) << ep;
      EXPECT_THAT(r.out, HasSubstr("DirectML needs Windows")) << ep;
    } else {
      EXPECT_THAT(r.out, HasSubstr("CUDA (cuda, CUDAExecutionProvider)")) << ep;
      EXPECT_THAT(r.out, HasSubstr("EBB_ORT_ROOT")) << ep;
    }
    // --ep cpu ignores the config's list; so does the option in every other spelling.
    auto ok =
        testing::RunCli("generate " + copy.dir() + " --input-ids 5,17 --max-length 4 --ep cpu");
    EXPECT_EQ(ok.status, 0) << ep << "\n" << ok.out;
    ok = testing::RunCli("generate " + copy.dir() +
                         " --input-ids 5,17 --max-length 4 --option execution_provider=CPU");
    EXPECT_EQ(ok.status, 0) << ep << "\n" << ok.out;
    ModelOptions mo;
    mo.Set("execution_provider", "CPUExecutionProvider");
    EXPECT_NO_THROW(ebb::LoadModel(copy.dir(), mo)) << ep;
    try {
      ebb::LoadModel(copy.dir());
      ADD_FAILURE() << ep << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unavailable) << ep;
    }
  }
  // --ep names a provider this build lacks: the same clear message.
  const auto r = testing::RunCli("generate " + Tiny().string() + " --input-ids 5,17 --ep dml");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("execution_provider=dml asks for the execution provider DirectML"));
  // provider_options for the CUDA EP, under ORT's name: no longer a made-up bootstrap switch.
  const auto p = testing::RunCli("generate " + Tiny().string() +
                                 " --input-ids 5,17 --provider-option "
                                 "CUDAExecutionProvider.gpu_mem_limit=1000000");
  EXPECT_EQ(p.status, 1) << p.out;
  EXPECT_THAT(p.out, HasSubstr("provider_options.CUDAExecutionProvider asks for"));
  EXPECT_THAT(p.out, Not(HasSubstr("EBB_ORT_GPU")));
}

}  // namespace
}  // namespace ebb
