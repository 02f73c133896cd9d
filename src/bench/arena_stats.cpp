#include "bench/arena_stats.h"

#include <onnxruntime_cxx_api.h>

#include "ort/arena_stats.h"

namespace ebb::bench {

ArenaSample ToArenaSample(const ArenaStats& stats) {
  ArenaSample s;
  if (!stats.available) return s;
  if (stats.in_use_bytes >= 0) s.in_use_bytes = static_cast<uint64_t>(stats.in_use_bytes);
  if (stats.total_allocated_bytes >= 0) {
    s.total_allocated_bytes = static_cast<uint64_t>(stats.total_allocated_bytes);
  }
  return s;
}

ArenaSample ReadSessionCpuArena(Ort::Session& session) {
  const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  return ToArenaSample(internal::ReadCpuArenaStats(session, cpu));
}

}  // namespace ebb::bench
