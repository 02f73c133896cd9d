// Which of ebb's CPU kernels a load moves on which CPU (CpuOpsIsasFor, ResolveCpuOps in
// model/cpu_ops_rewrite.h) and what the compiled-model cache key says about it (CpuOpsKeyLines in
// model/model_cache_key.h), on made-up flag sets for each CPU kind: the machine that runs the
// tests has one of them only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "model/cpu_ops_rewrite.h"
#include "model/model_cache_key.h"

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// lscpu's flag names.
const std::set<std::string> kAvx512Vnni = {"avx2",     "fma",      "f16c",     "avx512f",
                                           "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"};
const std::set<std::string> kAvx512NoVnni = {"avx2",     "fma",      "f16c",    "avx512f",
                                             "avx512bw", "avx512dq", "avx512vl"};
const std::set<std::string> kAvx2 = {"avx", "avx2", "fma", "f16c"};
const std::set<std::string> kAvx2AvxVnni = {"avx", "avx2", "fma", "f16c", "avx_vnni"};
const std::set<std::string> kAvx2NoF16c = {"avx", "avx2", "fma"};
const std::set<std::string> kSse = {"sse4_2", "avx"};

TEST(CpuOpsChoice, EachKernelTakesTheBestSetTheCpuHas) {
  EXPECT_EQ(CpuOpsIsasFor(kAvx512Vnni).attention, "AVX-512");
  EXPECT_EQ(CpuOpsIsasFor(kAvx512Vnni).matmul, "AVX-512 VNNI");
  EXPECT_EQ(CpuOpsIsasFor(kAvx512NoVnni).attention, "AVX-512");
  EXPECT_EQ(CpuOpsIsasFor(kAvx512NoVnni).matmul, "AVX2");
  EXPECT_EQ(CpuOpsIsasFor(kAvx2).attention, "AVX2");
  EXPECT_EQ(CpuOpsIsasFor(kAvx2).matmul, "AVX2");
  // AVX-VNNI has no set of its own (yet): the AVX2 set, which gives the same bits.
  EXPECT_EQ(CpuOpsIsasFor(kAvx2AvxVnni).matmul, "AVX2");
  // The attention's AVX2 set converts the fp16 KV with F16C; the matmul does not need it.
  EXPECT_EQ(CpuOpsIsasFor(kAvx2NoF16c).attention, "");
  EXPECT_EQ(CpuOpsIsasFor(kAvx2NoF16c).matmul, "AVX2");
  EXPECT_EQ(CpuOpsIsasFor(kSse).attention, "");
  EXPECT_EQ(CpuOpsIsasFor(kSse).matmul, "");
}

TEST(CpuOpsChoice, AutoMovesWhatTheCpuCanRunAndANamedKindSaysWhyNot) {
  std::string note;
  for (const auto& flags : {kAvx512Vnni, kAvx512NoVnni, kAvx2}) {
    const CpuOpsKinds k = ResolveCpuOps("auto", flags, &note);
    EXPECT_TRUE(k.attention && k.matmul);
  }
  EXPECT_EQ(note, "");
  CpuOpsKinds k = ResolveCpuOps("auto", kSse, &note);
  EXPECT_FALSE(k.any());
  EXPECT_FALSE(ResolveCpuOps("off", kAvx512Vnni, &note).any());
  k = ResolveCpuOps("matmul", kAvx2NoF16c, &note);
  EXPECT_TRUE(k.matmul);
  EXPECT_FALSE(k.attention);
  k = ResolveCpuOps("attention", kAvx2NoF16c, &note);
  EXPECT_FALSE(k.any());
  EXPECT_THAT(note, HasSubstr("F16C"));
  note.clear();
  k = ResolveCpuOps("matmul", kSse, &note);
  EXPECT_FALSE(k.any());
  EXPECT_THAT(note, HasSubstr("AVX2 + FMA"));
}

// The key says "cpu_ops_matmul=avx2" exactly where the int4 matmul moves and runs its AVX2 set:
// an entry built there before that set existed has the matmuls on MLAS and must not be reused.
// On an AVX-512 VNNI CPU the lines are those of before, so its entries keep their keys.
TEST(CpuOpsChoice, TheCacheKeyNamesTheMatmulsAvx2SetWhereItRuns) {
  EXPECT_EQ(CpuOpsKeyLines("off", kAvx2), "");
  EXPECT_EQ(CpuOpsKeyLines("auto", kAvx512Vnni), "cpu_ops=auto\n");
  EXPECT_EQ(CpuOpsKeyLines("matmul", kAvx512Vnni), "cpu_ops=matmul\n");
  EXPECT_EQ(CpuOpsKeyLines("auto", kAvx2), "cpu_ops=auto\ncpu_ops_matmul=avx2\n");
  EXPECT_EQ(CpuOpsKeyLines("auto", kAvx512NoVnni), "cpu_ops=auto\ncpu_ops_matmul=avx2\n");
  EXPECT_EQ(CpuOpsKeyLines("matmul", kAvx2AvxVnni), "cpu_ops=matmul\ncpu_ops_matmul=avx2\n");
  // The matmul does not move: nothing to say about its set.
  EXPECT_EQ(CpuOpsKeyLines("attention", kAvx2), "cpu_ops=attention\n");
  EXPECT_THAT(CpuOpsKeyLines("auto", kSse), Not(HasSubstr("cpu_ops_matmul")));
}

}  // namespace
}  // namespace ebb::internal
