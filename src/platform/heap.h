// platform/heap: the C library's allocator. Part of the platform seam (band 0,
// docs/architecture.md "The platform seam"). Nothing here throws.
#pragma once

namespace ebb::platform {

// Returns free heap memory to the system (glibc: malloc_trim(0); it keeps freed memory resident
// otherwise: top pad, fastbins, unmerged arenas). A hint: an allocator without it does nothing.
void ReturnFreeHeap();

// Caps the allocator's per-thread arenas at `n` (glibc: mallopt M_ARENA_MAX). Returns whether
// the cap is in effect (false: the allocator has no such setting or refused it).
bool LimitHeapArenas(int n);

}  // namespace ebb::platform
