// Process memory figures (ebb::ReadProcessMemory, include/ebb/process_memory.h) and the parser
// behind them.
#pragma once

#include <string_view>

#include "ebb/process_memory.h"
#include "ebb/stats.h"

namespace ebb::internal {

// Parses the text of a /proc/<pid>/status file ("VmRSS:   1234 kB" lines) into bytes. A field
// the text does not have stays -1; anon_bytes is RssAnon + VmSwap (VmSwap absent counts as 0).
ProcessMemory ParseProcessStatus(std::string_view text);

}  // namespace ebb::internal
