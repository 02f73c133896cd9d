// ebb/process_memory.h — this process's memory as the OS counts it (ProcessMemory, ebb/stats.h).
// Thread-safety: may be called from any thread.
#pragma once

#include "ebb/export.h"
#include "ebb/stats.h"

namespace ebb {

// Reads /proc/self/status; fields stay -1 where the OS has no such line.
EBB_API ProcessMemory ReadProcessMemory();

}  // namespace ebb
