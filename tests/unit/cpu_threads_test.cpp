// ebb's default intra-op thread count (ort/cpu_threads.h): the physical cores the process may
// use. ORT's own default gave one thread on a 2-vCPU AMD EPYC VM (1.3x slower decode).
#include "ort/cpu_threads.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>

#include "test_env.h"

namespace ebb::internal {
namespace {

TEST(CpuThreads, HyperThreadSiblingsCountOnce) {
  CpuTopology t;
  t.allowed_cpus = {0, 1, 2, 3};
  t.core_of = {{0, {0, 0}}, {1, {0, 1}}, {2, {0, 0}}, {3, {0, 1}}};  // 2 cores, 2 threads each
  EXPECT_EQ(PhysicalCoresFor(t), 2);
  t.core_of[2] = {1, 0};  // same core id on another package is another core
  EXPECT_EQ(PhysicalCoresFor(t), 3);
}

TEST(CpuThreads, OnlyTheCpusTheProcessMayUseCount) {
  CpuTopology t;
  for (int c = 0; c < 64; ++c) t.core_of[c] = {0, c};
  t.allowed_cpus = {4, 5};  // taskset -c 4,5 on a 64-core host
  EXPECT_EQ(PhysicalCoresFor(t), 2);
}

TEST(CpuThreads, ACgroupQuotaCapsTheCountRoundingUp) {
  CpuTopology t;
  for (int c = 0; c < 64; ++c) {
    t.allowed_cpus.push_back(c);
    t.core_of[c] = {0, c};
  }
  t.cpu_quota = 2.0;  // docker --cpus=2
  EXPECT_EQ(PhysicalCoresFor(t), 2);
  t.cpu_quota = 1.5;
  EXPECT_EQ(PhysicalCoresFor(t), 2);
  t.cpu_quota = 0.25;
  EXPECT_EQ(PhysicalCoresFor(t), 1);
}

TEST(CpuThreads, CpusWithoutTopologyCountOneEachAndTheAnswerIsNeverZero) {
  CpuTopology t;
  t.allowed_cpus = {0, 1, 2};
  EXPECT_EQ(PhysicalCoresFor(t), 3);
  EXPECT_EQ(PhysicalCoresFor(CpuTopology{}), 1);
}

TEST(CpuThreads, TheTightestCgroupCpuMaxOnThePathIsTheQuota) {
  namespace fs = std::filesystem;
  testing::TempDir d("cgroup");
  auto cpu_max = [&](const std::string& rel, const std::string& text) {
    fs::create_directories(d.path() / rel);
    std::ofstream(d.path() / rel / "cpu.max") << text;
  };
  cpu_max("", "max 100000\n");                 // the root: no limit
  cpu_max("system.slice", "300000 100000\n");  // 3 CPUs for the slice
  cpu_max("system.slice/ebb.service", "max 100000\n");
  EXPECT_EQ(CgroupCpuQuota("0::/system.slice/ebb.service\n", d.path()), 3.0);
  cpu_max("system.slice/ebb.service", "150000 100000\n");  // the service's own, tighter
  EXPECT_EQ(CgroupCpuQuota("0::/system.slice/ebb.service\n", d.path()), 1.5);
  // A container in its own cgroup namespace sees itself at "/": the root's file is its limit.
  cpu_max("", "200000 100000\n");
  EXPECT_EQ(CgroupCpuQuota("0::/\n", d.path()), 2.0);
  // No v2 line (a v1-only host), a malformed file, or no file: no quota.
  EXPECT_FALSE(CgroupCpuQuota("4:cpu,cpuacct:/x\n", d.path()).has_value());
  cpu_max("bad", "lots of cpus\n");
  cpu_max("", "max 100000\n");
  EXPECT_FALSE(CgroupCpuQuota("0::/bad\n", d.path()).has_value());
  EXPECT_FALSE(CgroupCpuQuota("0::/nowhere/at/all\n", d.path()).has_value());
}

TEST(CpuThreads, ThisProcessGetsAtLeastOneAndAtMostItsAllowedCpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int allowed = CPU_COUNT(&set);
  const CpuTopology t = ReadCpuTopology();
  EXPECT_EQ(static_cast<int>(t.allowed_cpus.size()), allowed);
  EXPECT_GE(DefaultIntraOpThreads(), 1);
  EXPECT_LE(DefaultIntraOpThreads(), allowed);
  EXPECT_EQ(DefaultIntraOpThreads(), PhysicalCoresFor(t));
}

}  // namespace
}  // namespace ebb::internal
