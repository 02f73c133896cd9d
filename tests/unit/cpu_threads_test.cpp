// ebb's default intra-op thread count (ort/cpu_threads.h): the physical cores the process may
// use. ORT's own default gave one thread on a 2-vCPU AMD EPYC VM (1.3x slower decode).
#include "ort/cpu_threads.h"

#include <gtest/gtest.h>
#include <sched.h>

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
