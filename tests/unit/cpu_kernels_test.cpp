// Which MLAS int4 kernel runs, from the CPU's flags, in the order MLAS's platform.cpp checks them
// (issue 28: every figure names the kernel path it came from).
#include "ort/cpu_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ebb/version.h"

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

#if defined(__x86_64__)
TEST(CpuKernels, MlasInt4KernelFollowsMlasDispatchOrder) {
  const std::set<std::string> avx2 = {"sse4_2", "avx", "avx2", "fma", "f16c"};
  EXPECT_EQ(MlasInt4Kernel({}), "generic");
  EXPECT_EQ(MlasInt4Kernel({"avx", "avx2"}), "generic") << "AVX2 without FMA is not MLAS's AVX2";
  EXPECT_EQ(MlasInt4Kernel(avx2), "AVX2");  // e.g. the AMD EPYC of 2026-11-30
  auto with = [&](std::set<std::string> s, std::initializer_list<const char*> more) {
    for (const char* f : more) s.insert(f);
    return s;
  };
  EXPECT_EQ(MlasInt4Kernel(with(avx2, {"avx_vnni"})), "AVX2VNNI");
  EXPECT_EQ(MlasInt4Kernel(with(avx2, {"avx512f"})), "AVX2")
      << "AVX-512 F alone is not MLAS's AVX-512 core (BW/DQ/VL too)";
  const auto core = with(avx2, {"avx512f", "avx512bw", "avx512dq", "avx512vl"});
  EXPECT_EQ(MlasInt4Kernel(core), "AVX512");
  EXPECT_EQ(MlasInt4Kernel(with(core, {"avx_vnni"})), "AVX512") << "AVX-512 replaces AVX-VNNI";
  EXPECT_EQ(MlasInt4Kernel(with(core, {"avx512_vnni", "avx_vnni"})), "AVX512VNNI");
  EXPECT_EQ(MlasInt4Kernel(with(core, {"avx512_vnni", "amx_tile", "amx_int8"})), "AVX512VNNI")
      << "MLAS has no AMX kernel for int4";
}

TEST(CpuKernels, TheDescriptionNamesTheKernelAndSaysWhatAmxIsUsedFor) {
  const std::set<std::string> xeon = {"avx2",     "fma",      "avx512f",  "avx512bw",
                                      "avx512dq", "avx512vl", "avx_vnni", "avx512_vnni",
                                      "amx_tile", "amx_int8"};
  EXPECT_EQ(DescribeCpuKernels(xeon),
            "MLAS int4 MatMulNBits: AVX512VNNI (CPU has AMX; MLAS uses it for 8-bit QGEMM only)");
  EXPECT_EQ(DescribeCpuKernels({"avx2", "fma"}), "MLAS int4 MatMulNBits: AVX2");
}
#endif

TEST(CpuKernels, ThisMachineHasFlagsAndThePublicLineAgreesWithThem) {
  const auto flags = CpuFlags();
  EXPECT_FALSE(flags.empty()) << "/proc/cpuinfo has a flags (x86) or Features (Arm) line";
  EXPECT_EQ(ebb::CpuKernels(), DescribeCpuKernels(flags));
  EXPECT_THAT(ebb::CpuKernels(), StartsWith("MLAS int4 MatMulNBits: "));
  if (flags.count("avx2") && flags.count("fma")) {
    EXPECT_THAT(ebb::CpuKernels(), Not(HasSubstr("generic")));
  }
}

}  // namespace
}  // namespace ebb::internal
