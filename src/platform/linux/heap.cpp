// Linux (glibc) implementation of platform/heap.h.
#include "platform/heap.h"

#include <malloc.h>

namespace ebb::platform {

void ReturnFreeHeap() { malloc_trim(0); }

bool LimitHeapArenas(int n) { return mallopt(M_ARENA_MAX, n) == 1; }

}  // namespace ebb::platform
