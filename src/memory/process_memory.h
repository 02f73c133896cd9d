// Process memory figures (ebb::ReadProcessMemory, include/ebb/stats.h) and the parser behind them.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "ebb/stats.h"

namespace ebb::internal {

// Parses the text of a /proc/<pid>/status file ("VmRSS:   1234 kB" lines) into bytes. A field
// the text does not have stays -1; anon_bytes is RssAnon + VmSwap (VmSwap absent counts as 0).
ProcessMemory ParseProcessStatus(std::string_view text);

// The JSON objects of ToJson(MemoryStats), shared by every serialisation of these figures
// (Runtime::List as JSON, the C ABI, Python), so that the field names cannot drift apart.
nlohmann::ordered_json KvMemoryJson(const KvMemory& kv);
nlohmann::ordered_json ArenaStatsJson(const ArenaStats& a);
nlohmann::ordered_json WeightsMemoryJson(const WeightsMemory& w);

}  // namespace ebb::internal
