// KvPool: the per-model budget under concurrent allocation.
#include "kv/kv_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ebb/error.h"

namespace ebb::internal {
namespace {

// Issue 10 (kv_pool): the budget was checked under one lock and charged under another, so two
// threads could both pass the check and together go over kv_cache.max_bytes.
TEST(KvPoolIssue10, ConcurrentAllocationsNeverExceedTheBudget) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  constexpr int kThreads = 16;
  constexpr int kRounds = 200;
  const uint64_t block = 4 * page;
  // Room for half the threads at once: every round, some must be refused.
  const uint64_t max_bytes = block * kThreads / 2;
  KvPool pool(max_bytes, /*retain_bytes=*/0);
  std::atomic<uint64_t> successes{0}, refusals{0}, over{0};
  std::atomic<int> ready{0};
  for (int round = 0; round < kRounds; ++round) {
    std::vector<KvBlock> held(kThreads);
    std::vector<std::thread> threads;
    ready = 0;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();  // start together
        try {
          held[t] = pool.Allocate(block);
          successes.fetch_add(1);
          if (pool.Stats().in_use_bytes > max_bytes) over.fetch_add(1);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
          refusals.fetch_add(1);
        }
      });
    }
    for (auto& th : threads) th.join();
    const KvStats s = pool.Stats();
    EXPECT_LE(s.in_use_bytes, max_bytes) << "round " << round;
    EXPECT_LE(s.peak_in_use_bytes, max_bytes) << "round " << round;
  }
  EXPECT_EQ(over.load(), 0u);
  const KvStats s = pool.Stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(successes + refusals, static_cast<uint64_t>(kThreads) * kRounds);
  EXPECT_EQ(s.num_allocations, successes.load());
  EXPECT_EQ(s.num_refusals, refusals.load());
  EXPECT_LE(s.peak_in_use_bytes, max_bytes);
}

// The admission hook sees exactly what the pool charges: a refused hook leaves nothing charged,
// and every admitted byte is released once.
TEST(KvPoolIssue10, AdmitAndReleaseStayBalancedUnderConcurrency) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  KvPool pool(64 * page, 0);
  std::atomic<int64_t> admitted{0};
  std::atomic<int> calls{0};
  pool.set_admit_fn(
      [&](uint64_t b, bool) {
        if (calls.fetch_add(1) % 5 == 4) throw Error(ErrorCode::ResourceExhausted, "hook");
        admitted.fetch_add(static_cast<int64_t>(b));
      },
      [&](uint64_t b) { admitted.fetch_sub(static_cast<int64_t>(b)); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        try {
          KvBlock b = pool.Allocate(page * (1 + i % 3));
        } catch (const Error&) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(admitted.load(), 0);
  EXPECT_EQ(pool.Stats().in_use_bytes, 0u);
}

}  // namespace
}  // namespace ebb::internal
