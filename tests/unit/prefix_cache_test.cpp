// PrefixCache (kv/prefix_cache.h) on its own: longest whole-block matches, the tree of shared
// blocks, LRU eviction of leaves under max_bytes, pins, drops, and concurrent stores.
#include "kv/prefix_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace ebb::internal {
namespace {

using Tokens = std::vector<int32_t>;
constexpr int kB = PrefixCache::kBlockTokens;

uint64_t Page() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

Tokens Cat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Tokens Seq(int n, int seed) {
  Tokens t;
  for (int i = 0; i < n; ++i) t.push_back(seed * 1000 + i);
  return t;
}

// The "KV" of a block is its first token id, repeated: a lookup can check what it got.
void Store(PrefixCache& c, const Tokens& t, int n, std::atomic<int>* reads = nullptr) {
  c.Store(t, n, [&](int start, char* dst) {
    if (reads) ++*reads;
    const int32_t v = t[static_cast<size_t>(start)];
    std::memcpy(dst, &v, sizeof v);
  });
}
int32_t Tag(const PrefixCache::Match& m, size_t i) {
  int32_t v;
  std::memcpy(&v, m.blocks[i]->memory.data(), sizeof v);
  return v;
}

TEST(PrefixCacheUnit, MatchesWholeBlocksFromTheFirstTokenOnly) {
  KvPool pool(0, 0);
  PrefixCache c(pool, /*token_bytes=*/64, /*max_bytes=*/64 * Page());
  const Tokens a = Seq(50, 1);
  Store(c, a, 50);  // 3 whole blocks
  EXPECT_EQ(c.Stats().blocks, 3u);
  EXPECT_EQ(c.Stats().tokens_stored, 48u);
  auto m = c.Lookup(a, 49);
  ASSERT_EQ(m.tokens(), 48);
  EXPECT_EQ(Tag(m, 0), a[0]);
  EXPECT_EQ(Tag(m, 2), a[32]);
  EXPECT_EQ(c.Lookup(a, 47).tokens(), 32) << "max_tokens caps the match to whole blocks";
  Tokens b = a;
  b[20] = -1;  // diverges in the second block
  EXPECT_EQ(c.Lookup(b, 49).tokens(), 16);
  Tokens shifted(a.begin() + 16, a.end());
  EXPECT_EQ(c.Lookup(shifted, 30).tokens(), 0) << "a block matches only after its own parent";
  const PrefixCacheStats st = c.Stats();
  EXPECT_EQ(st.hits, 3u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.tokens_reused, 48u + 32 + 16);
  EXPECT_EQ(pool.Stats().in_use_bytes, st.bytes) << "blocks are the pool's memory";
}

TEST(PrefixCacheUnit, SharedPrefixesAreStoredOnceAndOnlyNewBlocksAreRead) {
  KvPool pool(0, 0);
  PrefixCache c(pool, 64, 64 * Page());
  const Tokens system = Seq(32, 2);
  std::atomic<int> reads{0};
  Store(c, Cat(system, Seq(16, 3)), 48, &reads);
  Store(c, Cat(system, Seq(16, 4)), 48, &reads);
  EXPECT_EQ(reads.load(), 4) << "the second store read only its own third block";
  EXPECT_EQ(c.Stats().blocks, 4u);
}

TEST(PrefixCacheUnit, EvictsLeastRecentlyUsedLeavesUnderMaxBytes) {
  KvPool pool(0, 0);
  PrefixCache c(pool, 64, 3 * Page());  // three blocks
  const Tokens a = Seq(32, 5), b = Seq(16, 6);
  Store(c, a, 32);  // a0 <- a1
  Store(c, b, 16);  // b0
  c.Lookup(a, 32);  // a is now more recent than b
  Store(c, Seq(16, 7), 16);
  EXPECT_EQ(c.Stats().blocks, 3u);
  EXPECT_EQ(c.Lookup(b, 16, false).tokens(), 0) << "b was the least recently used leaf";
  EXPECT_EQ(c.Lookup(a, 32, false).tokens(), 32);
  EXPECT_EQ(c.Stats().evicted_blocks, 1u);
  EXPECT_LE(c.Stats().bytes, 3 * Page());
  // A parent is never evicted before its children: the chain stays walkable.
  Store(c, Seq(16, 8), 16);
  Store(c, Seq(16, 9), 16);
  const auto m = c.Lookup(a, 32, false);
  EXPECT_TRUE(m.tokens() == 0 || m.tokens() == 16 || m.tokens() == 32);
  EXPECT_EQ(c.Stats().blocks, 3u);
}

TEST(PrefixCacheUnit, PinnedBlocksSurviveEvictionDropsAndALowerBudget) {
  KvPool pool(0, 0);
  PrefixCache c(pool, 64, 4 * Page());
  const Tokens sys = Seq(40, 10);
  Store(c, sys, 40);
  EXPECT_EQ(c.Pin(sys), 32);
  EXPECT_EQ(c.Pin(sys), 32) << "pinning twice pins once";
  for (int i = 0; i < 6; ++i) Store(c, Seq(16, 20 + i), 16);
  EXPECT_EQ(c.Lookup(sys, 40, false).tokens(), 32);
  EXPECT_EQ(c.Drop(UINT64_MAX), 2 * Page()) << "only the two unpinned blocks";
  c.SetMaxBytes(Page());
  EXPECT_EQ(c.Lookup(sys, 40, false).tokens(), 32) << "a lower budget keeps pinned blocks";
  EXPECT_EQ(c.Stats().pinned_bytes, 2 * Page());
  EXPECT_TRUE(c.Unpin(sys));
  EXPECT_FALSE(c.Unpin(sys));
  EXPECT_EQ(c.Drop(UINT64_MAX), 2 * Page());
  EXPECT_EQ(pool.Stats().in_use_bytes, 0u);
  EXPECT_EQ(c.Pin(Seq(16, 99)), 0) << "nothing stored: nothing pinned";
}

TEST(PrefixCacheUnit, AnEvictedBlockStaysValidForTheRequestCopyingFromIt) {
  KvPool pool(0, 0);
  PrefixCache c(pool, 64, 8 * Page());
  const Tokens a = Seq(16, 30);
  Store(c, a, 16);
  PrefixCache::Match m = c.Lookup(a, 16);
  c.Drop(UINT64_MAX);
  EXPECT_EQ(c.Stats().blocks, 0u);
  EXPECT_EQ(Tag(m, 0), a[0]);
  EXPECT_EQ(pool.Stats().in_use_bytes, Page()) << "still charged while the request holds it";
  m.blocks.clear();
  EXPECT_EQ(pool.Stats().in_use_bytes, 0u);
}

TEST(PrefixCacheUnit, OffStoresNothingAndAFullPoolStoresLessWithoutThrowing) {
  KvPool pool(2 * Page(), 0);
  PrefixCache off(pool, 64, 0);
  Store(off, Seq(64, 40), 64);
  EXPECT_EQ(off.Stats().blocks, 0u);
  EXPECT_FALSE(off.enabled());
  PrefixCache on(pool, 64, 16 * Page());
  Store(on, Seq(64, 41), 64);  // 4 blocks wanted, the pool has room for 2
  EXPECT_EQ(on.Stats().blocks, 2u);
  EXPECT_EQ(pool.Stats().num_refusals, 0u) << "a cache block that does not fit is no refusal";
}

TEST(PrefixCacheUnit, ThePoolReclaimsTheCacheBeforeRefusingARequest) {
  KvPool pool(4 * Page(), 0);
  PrefixCache c(pool, 64, 4 * Page());
  pool.set_reclaim_fn([&](uint64_t bytes) { return c.Drop(bytes); });
  Store(c, Seq(64, 50), 64);
  ASSERT_EQ(c.Stats().blocks, 4u);
  KvBlock request = pool.Allocate(2 * Page());  // fits only if two blocks go
  EXPECT_TRUE(request);
  EXPECT_EQ(c.Stats().blocks, 2u);
  EXPECT_EQ(c.Stats().reclaimed_blocks, 2u);
  EXPECT_EQ(pool.Stats().num_refusals, 0u);
  pool.set_reclaim_fn(nullptr);
}

TEST(PrefixCacheUnit, ConcurrentStoresAndLookupsStayConsistent) {
  KvPool pool(0, 0);
  PrefixCache c(pool, 64, 12 * Page());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const Tokens s = Cat(Seq(32, i % 3), Seq(16 + 16 * (i % 2), 100 + (t * 7 + i) % 11));
        Store(c, s, static_cast<int>(s.size()));
        const auto m = c.Lookup(s, static_cast<int>(s.size()));
        for (size_t b = 0; b < m.blocks.size(); ++b) {
          if (Tag(m, b) != s[b * kB]) ++bad;
        }
        if (c.Stats().bytes > 12 * Page()) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  c.Drop(UINT64_MAX);
  EXPECT_EQ(pool.Stats().in_use_bytes, 0u);
}

}  // namespace
}  // namespace ebb::internal
