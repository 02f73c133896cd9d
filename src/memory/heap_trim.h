// Returns free heap memory to the OS (malloc_trim on glibc). Called after a shrink or unload.
#pragma once

namespace ebb::internal {
void TrimHeap();

// Caps glibc's malloc arenas at `n` (mallopt M_ARENA_MAX) unless the user set MALLOC_ARENA_MAX.
// Why: glibc gives each new thread its own arena (up to 8 per core); a service whose connection
// threads take turns serving requests warms every arena to its peak, and freed memory stays
// split across them (measured: RSS climbing ~10 KiB per request over 2,000 requests with 28
// threads, flat with 2 arenas; docs/memory.md). Returns the cap in effect (0: glibc's default).
int LimitMallocArenas(int n);
}  // namespace ebb::internal
