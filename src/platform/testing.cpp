// platform/testing.h: the fault-injection counters, shared by every implementation of the seam
// (no system calls here).
#include "platform/testing.h"

#include <atomic>

namespace ebb::platform::testing {
namespace {

constexpr int kOps = static_cast<int>(Op::kCount);
std::atomic<int> g_count[kOps];  // armed failures left per op
std::atomic<int> g_err[kOps];    // the error they fail with
std::atomic<int> g_skip[kOps];   // calls to let through before the armed failures

}  // namespace

void FailNext(Op op, int err, int count) {
  const int i = static_cast<int>(op);
  if (i < 0 || i >= kOps || count <= 0) return;
  g_err[i].store(err);
  g_count[i].fetch_add(count);
}

void FailAfter(Op op, int skip, int err, int count) {
  const int i = static_cast<int>(op);
  if (i < 0 || i >= kOps || count <= 0) return;
  g_skip[i].store(skip > 0 ? skip : 0);
  FailNext(op, err, count);
}

void ClearFailures() {
  for (int i = 0; i < kOps; ++i) {
    g_count[i].store(0);
    g_skip[i].store(0);
  }
}

int FailuresLeft(Op op) {
  const int i = static_cast<int>(op);
  return i < 0 || i >= kOps ? 0 : g_count[i].load();
}

int TakeInjectedFailure(Op op) {
  const int i = static_cast<int>(op);
  if (i < 0 || i >= kOps) return 0;
  int left = g_count[i].load(std::memory_order_relaxed);
  if (left <= 0) return 0;
  for (int skip = g_skip[i].load(); skip > 0;) {
    if (g_skip[i].compare_exchange_weak(skip, skip - 1)) return 0;
  }
  while (left > 0) {
    if (g_count[i].compare_exchange_weak(left, left - 1)) return g_err[i].load();
  }
  return 0;
}

}  // namespace ebb::platform::testing
