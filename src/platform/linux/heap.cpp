// Linux (glibc) implementation of platform/heap.h.
#include "platform/heap.h"

#include <malloc.h>

#include <mutex>

namespace ebb::platform {
namespace {

// glibc's ptmalloc_init() sets its "initialised" flag before it sets up the main arena's bins and
// the calling thread's arena. In an ordinary process the first malloc did that long before any
// of our threads; where malloc is replaced (ASan, a preloaded jemalloc or tcmalloc) glibc's own
// heap is first touched here, and two threads making that first call at once crashed: one walked
// the still-empty bins (SEGV in mtrim, seen in serve's concurrent loads under ASan), or both ran
// the initialisation and glibc's arena accounting aborted at thread exit. So the first call into
// glibc's heap runs alone; afterwards the calls are thread-safe (glibc locks each arena).
void InitialiseGlibcHeapOnce() {
  static std::once_flag once;
  std::call_once(once, [] { (void)malloc_trim(0); });
}

}  // namespace

void ReturnFreeHeap() {
  InitialiseGlibcHeapOnce();
  malloc_trim(0);
}

bool LimitHeapArenas(int n) {
  InitialiseGlibcHeapOnce();
  return mallopt(M_ARENA_MAX, n) == 1;
}

}  // namespace ebb::platform
