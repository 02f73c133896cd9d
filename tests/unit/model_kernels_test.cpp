// DescribeModelKernels (issue 28): the per-model kernel line of ModelInfo::kernels, `ebb info`
// and the runtime's model list, from a graph's operator counts and the CPU's flags.
#include "model/model_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::set<std::string> kAvx512Vnni = {"avx2",     "fma",      "avx512f",    "avx512bw",
                                           "avx512dq", "avx512vl", "avx512_vnni"};

std::map<OpId, int> Int4Decoder() {
  return {{{"com.microsoft", "MatMulNBits"}, 85},
          {{"com.microsoft", "GroupQueryAttention"}, 12},
          {{"com.microsoft", "SkipSimplifiedLayerNormalization"}, 24},
          {{"", "Gather"}, 1},
          {{"", "Mul"}, 24}};
}

TEST(ModelKernels, AnInt4DecoderNamesMlassKernelAndTheAttentionOp) {
  EXPECT_EQ(DescribeModelKernels(Int4Decoder(), kAvx512Vnni, "", ""),
            "MatMulNBits x85: MLAS AVX512VNNI; GroupQueryAttention x12: ORT CPU");
  EXPECT_EQ(DescribeModelKernels(Int4Decoder(), {"avx2", "fma"}, "", ""),
            "MatMulNBits x85: MLAS AVX2; GroupQueryAttention x12: ORT CPU");
}

// ebb's built-in kernels are one group, each named with the instruction set its kernel picks on
// the CPU: AVX-512 (VNNI for the matmul) where the CPU has it, else AVX2; on a CPU with AVX-512
// but no VNNI the attention runs AVX-512 and the matmul AVX2.
TEST(ModelKernels, EbbsBuiltInKernelsNameTheirInstructionSet) {
  unsetenv("EBB_CPU_OPS_ISA");  // the CPU's choice, not a forced AVX2 (docs/cpu_ops.md)
  const std::map<OpId, int> moved = {{{"ebb.cpu", "GroupQueryAttention"}, 12},
                                     {{"ebb.cpu", "MatMulNBits"}, 85},
                                     {{"", "Gather"}, 1}};
  EXPECT_EQ(DescribeModelKernels(moved, kAvx512Vnni, "", "", "auto"),
            "ebb.cpu.GroupQueryAttention x12 (AVX-512), ebb.cpu.MatMulNBits x85 (AVX-512 VNNI): "
            "ebb (built in, cpu_ops=auto)");
  EXPECT_EQ(DescribeModelKernels(moved, {"avx2", "fma", "f16c"}, "", "", "auto"),
            "ebb.cpu.GroupQueryAttention x12 (AVX2), ebb.cpu.MatMulNBits x85 (AVX2): ebb (built "
            "in, cpu_ops=auto)");
  auto no_vnni = kAvx512Vnni;
  no_vnni.erase("avx512_vnni");
  EXPECT_EQ(DescribeModelKernels(moved, no_vnni, "", "", "auto"),
            "ebb.cpu.GroupQueryAttention x12 (AVX-512), ebb.cpu.MatMulNBits x85 (AVX2): ebb (built "
            "in, cpu_ops=auto)");
}

TEST(ModelKernels, AmxIsMentionedOnlyWhereMatMulNBitsCouldHaveUsedIt) {
  auto amx = kAvx512Vnni;
  amx.insert("amx_int8");
  EXPECT_THAT(DescribeModelKernels(Int4Decoder(), amx, "", ""),
              HasSubstr("(CPU has AMX; MLAS uses it for 8-bit QGEMM only)"));
  const std::map<OpId, int> fp32 = {{{"", "MatMul"}, 7}, {{"", "Gemm"}, 1}};
  EXPECT_EQ(DescribeModelKernels(fp32, amx, "", ""), "Gemm x1, MatMul x7: MLAS GEMM");
}

TEST(ModelKernels, AnFp32GraphHasNoInt4LineAndFusedMatMulCountsAsAMatMul) {
  const std::map<OpId, int> ops = {{{"", "MatMul"}, 7},
                                   {{"com.microsoft", "FusedMatMul"}, 2},
                                   {{"com.microsoft", "MultiHeadAttention"}, 2}};
  const std::string line = DescribeModelKernels(ops, kAvx512Vnni, "", "");
  EXPECT_EQ(line, "MatMul x7, FusedMatMul x2: MLAS GEMM; MultiHeadAttention x2: ORT CPU");
  EXPECT_THAT(line, Not(HasSubstr("MatMulNBits")));
}

TEST(ModelKernels, ACustomOpNamesItsDomainAndTheLibrarysFileName) {
  std::map<OpId, int> ops = Int4Decoder();
  ops.erase({"com.microsoft", "MatMulNBits"});
  ops[{"ebb.ggml", "MatMulQ4_0"}] = 85;
  EXPECT_EQ(DescribeModelKernels(ops, kAvx512Vnni, "/opt/m/libebb_ggml_matmul.so", ""),
            "GroupQueryAttention x12: ORT CPU; ebb.ggml.MatMulQ4_0 x85: custom op "
            "(libebb_ggml_matmul.so)");
  // ORT's own domains are not custom ops, whatever their operators.
  const std::map<OpId, int> ml = {{{"ai.onnx.ml", "TreeEnsembleRegressor"}, 1}};
  EXPECT_EQ(DescribeModelKernels(ml, kAvx512Vnni, "", ""), "ORT CPU");
  // A custom op with no library named (ORT then refuses the load; `ebb info` says which).
  const std::map<OpId, int> orphan = {{{"x.y", "Op"}, 1}};
  EXPECT_EQ(DescribeModelKernels(orphan, kAvx512Vnni, "", ""),
            "x.y.Op x1: custom op (no custom_ops_library named)");
}

TEST(ModelKernels, OnAGpuProviderTheProvidersKernelsAreNamedNotMlas) {
  const std::string line = DescribeModelKernels(Int4Decoder(), kAvx512Vnni, "", "cuda");
  EXPECT_EQ(line, "cuda: MatMulNBits x85, GroupQueryAttention x12");
  EXPECT_EQ(DescribeModelKernels({{{"", "Add"}, 1}}, kAvx512Vnni, "", "dml"), "dml");
}

}  // namespace
}  // namespace ebb::internal
