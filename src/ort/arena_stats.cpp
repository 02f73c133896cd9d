#include "ort/arena_stats.h"

#include <charconv>
#include <string>

namespace ebb::internal {

ArenaStats ReadCpuArenaStats(const Ort::Session& session, const Ort::MemoryInfo& cpu) {
  ArenaStats a;
  try {
    // The session's allocator for CPU memory: its own arena, or the env's shared one.
    Ort::Allocator alloc(session, cpu);
    Ort::KeyValuePairs kv = alloc.GetStats();
    auto get = [&](const char* key) -> int64_t {
      const char* v = kv.GetValue(key);
      if (v == nullptr) return -1;
      int64_t x = -1;
      std::from_chars(v, v + std::char_traits<char>::length(v), x);
      return x;
    };
    a.in_use_bytes = get("InUse");
    a.total_allocated_bytes = get("TotalAllocated");
    a.max_in_use_bytes = get("MaxInUse");
    a.num_allocs = get("NumAllocs");
    a.num_extensions = get("NumArenaExtensions");
    a.num_shrinkages = get("NumArenaShrinkages");
    a.limit_bytes = get("Limit");
    a.available = a.total_allocated_bytes >= 0;
  } catch (const Ort::Exception&) {
    a = ArenaStats{};
  }
  return a;
}

}  // namespace ebb::internal
