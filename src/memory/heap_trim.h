// Returns free heap memory to the OS (malloc_trim on glibc). Called after a shrink or unload.
#pragma once

namespace ebb::internal {
void TrimHeap();
}
