// The memory-pressure reader (src/memory/memory_pressure.h) on fake /proc and /sys/fs/cgroup
// trees: which cgroup "auto" picks (v2, hybrid v2, v1, none), what each file format reads as,
// and which samples count as pressure.
#include "memory/memory_pressure.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class MemoryPressureTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ebb-pressure-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(proc() / "pressure");
    fs::create_directories(proc() / "self");
    Write(proc() / "pressure/memory",
          "some avg10=0.50 avg60=0.10 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 "
          "avg300=0.00 total=1\n");
    Write(proc() / "meminfo",
          "MemTotal:       16000000 kB\nMemFree:         100000 kB\nMemAvailable:   8000000 kB\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path proc() const { return root_ / "proc"; }
  fs::path sys() const { return root_ / "sys"; }
  static void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << text;
  }
  fs::path root_;
};

TEST_F(MemoryPressureTree, AutoPicksTheV2CgroupWithAMemoryController) {
  Write(proc() / "self/cgroup", "0::/system.slice/ebb.service\n");
  const fs::path cg = sys() / "system.slice/ebb.service";
  Write(cg / "memory.current", "1048576000\n");
  Write(cg / "memory.high", "max\n");
  Write(cg / "memory.max", "2097152000\n");
  Write(cg / "memory.events", "low 0\nhigh 7\nmax 2\noom 0\n");
  Write(cg / "memory.pressure", "some avg10=3.25 avg60=1.00 avg300=0.00 total=9\n");
  const PressureSource s = ResolvePressureSource("auto", proc(), sys());
  EXPECT_EQ(s.cgroup, cg);
  EXPECT_THAT(s.Describe(), HasSubstr("cgroup " + cg.string()));
  const PressureSample x = ReadPressure(s);
  EXPECT_DOUBLE_EQ(x.psi_some_avg10, 3.25) << "the cgroup's own PSI, not the machine's 0.50";
  EXPECT_EQ(x.events_high, 7);
  EXPECT_EQ(x.events_max, 2);
  EXPECT_EQ(x.usage_bytes, 1048576000u);
  EXPECT_EQ(x.limit_bytes, 2097152000u) << "memory.high is max: memory.max is the limit";
}

TEST_F(MemoryPressureTree, HybridMountsFindV2UnderUnifiedElseTheV1MemoryController) {
  Write(proc() / "self/cgroup", "4:memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n");
  // The v2 root has no memory.current: it carries no memory controller here.
  Write(sys() / "unified/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  const fs::path v1 = sys() / "memory/docker/abc";
  Write(v1 / "memory.usage_in_bytes", "500\n");
  Write(v1 / "memory.limit_in_bytes", "9223372036854771712\n");
  PressureSource s = ResolvePressureSource("auto", proc(), sys());
  EXPECT_EQ(s.cgroup, v1);
  PressureSample x = ReadPressure(s);
  EXPECT_DOUBLE_EQ(x.psi_some_avg10, 0.50) << "v1 has no PSI: the machine's";
  EXPECT_EQ(x.events_high, -1);
  EXPECT_EQ(x.limit_bytes, 16000000ull * 1024) << "an unlimited v1 cgroup: the machine's headroom";
  EXPECT_EQ(x.usage_bytes, 8000000ull * 1024);

  Write(v1 / "memory.limit_in_bytes", "1000\n");
  x = ReadPressure(s);
  EXPECT_EQ(x.usage_bytes, 500u);
  EXPECT_EQ(x.limit_bytes, 1000u);

  Write(proc() / "self/cgroup", "0::/user.slice\n");
  Write(sys() / "unified/user.slice/memory.current", "42\n");
  s = ResolvePressureSource("auto", proc(), sys());
  EXPECT_EQ(s.cgroup, sys() / "unified/user.slice");
}

TEST_F(MemoryPressureTree, WithoutACgroupTheMachineIsRead) {
  Write(proc() / "self/cgroup", "0::/\n");
  PressureSource s = ResolvePressureSource("auto", proc(), sys());
  EXPECT_TRUE(s.cgroup.empty());
  EXPECT_THAT(s.Describe(), HasSubstr("the machine"));
  EXPECT_TRUE(ResolvePressureSource("machine", proc(), sys()).cgroup.empty());
  EXPECT_EQ(ResolvePressureSource("/some/cgroup", proc(), sys()).cgroup, "/some/cgroup");
  const PressureSample x = ReadPressure(s);
  EXPECT_DOUBLE_EQ(x.psi_some_avg10, 0.50);
  // No PSI at all (an old kernel): unknown, never pressure by itself.
  fs::remove(proc() / "pressure/memory");
  EXPECT_DOUBLE_EQ(ReadPressure(s).psi_some_avg10, -1);
  EXPECT_EQ(PressureReason(x, ReadPressure(s)), "");
}

TEST(PressureReason, AnUnreadableCounterKeepsItsLastValueSoARiseAcrossTheGapIsSeen) {
  PressureSample before;
  before.events_high = 3;
  before.events_max = 1;
  PressureSample gap;  // memory.events read mid-rewrite: no counters
  EXPECT_EQ(PressureReason(before, gap), "");
  const PressureSample baseline = NextBaseline(before, gap);
  EXPECT_EQ(baseline.events_high, 3);
  EXPECT_EQ(baseline.events_max, 1);
  PressureSample after = before;
  after.events_high = 4;
  EXPECT_THAT(PressureReason(baseline, after), HasSubstr("memory.events high rose by 1"));
  EXPECT_EQ(PressureReason(gap, after), "") << "without the carried value the rise is lost";
  EXPECT_EQ(NextBaseline(baseline, after).events_high, 4) << "a value read replaces the old one";
}

TEST(PressureReason, NamesEachSignalAndIgnoresQuietSamples) {
  PressureSample quiet;
  quiet.psi_some_avg10 = 9.99;
  quiet.events_high = 3;
  quiet.events_max = 1;
  quiet.usage_bytes = 90;
  quiet.limit_bytes = 100;
  EXPECT_EQ(PressureReason(quiet, quiet), "");

  PressureSample psi = quiet;
  psi.psi_some_avg10 = 10.0;
  EXPECT_THAT(PressureReason(quiet, psi), HasSubstr("PSI some avg10=10.00%"));

  PressureSample high = quiet;
  high.events_high = 5;
  EXPECT_THAT(PressureReason(quiet, high), HasSubstr("memory.events high rose by 2"));
  PressureSample max = quiet;
  max.events_max = 2;
  EXPECT_THAT(PressureReason(quiet, max), HasSubstr("memory.events max rose by 1"));
  PressureSample unknown_before = quiet;
  unknown_before.events_high = -1;
  EXPECT_EQ(PressureReason(unknown_before, quiet), "")
      << "the first sample has nothing to rise from";

  PressureSample tight = quiet;
  tight.usage_bytes = 96;
  EXPECT_THAT(PressureReason(quiet, tight), HasSubstr("headroom < 5%"));
  PressureSample over = quiet;
  over.usage_bytes = 120;  // usage past the limit (memory.high is soft)
  EXPECT_THAT(PressureReason(quiet, over), HasSubstr("headroom"));
  PressureSample unlimited = quiet;
  unlimited.limit_bytes = 0;
  unlimited.usage_bytes = 1ull << 40;
  EXPECT_EQ(PressureReason(quiet, unlimited), "");
}

}  // namespace
}  // namespace ebb::internal
