// Issue 28: the kernels a model's operators run on are visible per model (ModelInfo::kernels),
// the same in Model::info(), Runtime::List() and its JSON, ebb::InfoJson and `ebb info`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "ebb/json.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/version.h"
#include "ort/cpu_kernels.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// synth_model.py's llama: q, k, v, o, gate, up and down per layer, and the LM head.
std::string MatMuls(const ModelInfo& i) { return " x" + std::to_string(7 * i.num_layers + 1); }

ModelOptions OrtKernels() {
  ModelOptions o;
  o.Set("cpu_ops", "off");
  return o;
}

TEST(ModelKernels, AnInt4ModelRunsMatMulNBitsOnMlasAndItsAttentionOnOrt) {
  const auto model = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-int4", OrtKernels());
  const ModelInfo& i = model->info();
  const std::string mlas = internal::MlasInt4Kernel(internal::CpuFlags());
  EXPECT_THAT(i.kernels, HasSubstr("MatMulNBits" + MatMuls(i) + ": MLAS " + mlas));
  EXPECT_THAT(i.kernels,
              HasSubstr("GroupQueryAttention x" + std::to_string(i.num_layers) + ": ORT CPU"));
  EXPECT_THAT(i.kernels, Not(HasSubstr("MLAS GEMM"))) << "every matmul of the model is int4";
}

// By default (cpu_ops=auto) the nodes ebb's kernels take are one group of the line, naming the
// setting and each kernel's instruction set; nothing is left on ORT's kernels. On an AVX2 CPU
// both run their AVX2 sets; with AVX-512 (VNNI for the matmul), their AVX-512 sets.
TEST(ModelKernels, ByDefaultEbbsOwnKernelsAreOneGroupOfTheLine) {
  unsetenv("EBB_CPU_OPS_ISA");  // the CPU's choice, not a forced AVX2 (docs/cpu_ops.md)
  const auto model = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-int4");
  const ModelInfo& i = model->info();
  const auto& flags = internal::CpuFlags();
  const bool avx2 = flags.count("avx2") && flags.count("fma") && flags.count("f16c");
  const bool avx512 = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl");
  if (!avx2 && !avx512) {
    EXPECT_THAT(i.kernels, Not(HasSubstr("ebb.cpu"))) << "this CPU runs neither kernel";
    return;
  }
  const bool vnni = avx512 && flags.count("avx512_vnni");
  const std::string attention = "ebb.cpu.GroupQueryAttention x" + std::to_string(i.num_layers) +
                                (avx512 ? " (AVX-512)" : " (AVX2)");
  EXPECT_THAT(i.kernels,
              HasSubstr(attention + ", ebb.cpu.MatMulNBits" + MatMuls(i) +
                        (vnni ? " (AVX-512 VNNI)" : " (AVX2)") + ": ebb (built in, cpu_ops=auto)"));
  EXPECT_THAT(i.kernels, Not(HasSubstr("ORT CPU")));
  EXPECT_THAT(i.kernels, Not(HasSubstr("MLAS")));
}

TEST(ModelKernels, AnFp32ModelHasNoInt4Kernel) {
  const auto model = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32");
  EXPECT_THAT(model->info().kernels, HasSubstr("MatMul" + MatMuls(model->info()) + ": MLAS GEMM"));
  EXPECT_THAT(model->info().kernels, Not(HasSubstr("MatMulNBits")));
}

TEST(ModelKernels, EverySurfaceShowsTheSameLine) {
  const auto dir = testing::TestModelsDir() / "llama-tiny-int4";
  Runtime rt;
  const auto model = rt.Load("m", dir);
  const std::string line = model->info().kernels;
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(rt.List().at(0).kernels, line);
  EXPECT_EQ(nlohmann::json::parse(ToJson(rt.List()))[0]["kernels"], line);
  EXPECT_EQ(nlohmann::json::parse(InfoJson(*model))["kernels"], line);
  const auto info = testing::RunCli("info " + dir.string());
  ASSERT_EQ(info.status, 0) << info.out;
  EXPECT_THAT(info.out, HasSubstr("kernels:  " + line + "\n"));
  const auto json = testing::RunCli("info " + dir.string() + " --json");
  ASSERT_EQ(json.status, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["model"]["kernels"], line);
  EXPECT_EQ(j["cpu_kernels"], CpuKernels()) << "the process-wide line stays, for scripts";
}

}  // namespace
}  // namespace ebb
