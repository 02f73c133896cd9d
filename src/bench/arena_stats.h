// ORT arena figures for `ebb bench`, as an optional source each workload plugs in
// (Workload::Arena()). ebb runs read them through the public API (ModelControls::Stats()); the
// naive ORT baseline owns its session and reads them with libebb's internal reader. Absent
// figures (no arena, enable_cpu_mem_arena=0, or no allocation yet) are std::nullopt and become
// null in the reports.
#pragma once

#include <cstdint>
#include <optional>

#include "ebb/stats.h"

namespace Ort {
struct Session;
}

namespace ebb::bench {

struct ArenaSample {
  std::optional<uint64_t> in_use_bytes;           // ORT "InUse"
  std::optional<uint64_t> total_allocated_bytes;  // ORT "TotalAllocated"
};

// ebb's ArenaStats (-1 = not available) as a sample.
ArenaSample ToArenaSample(const ArenaStats& stats);

// Reads the CPU arena of `session` (its own arena, or the env's when the session uses env
// allocators). Never throws.
ArenaSample ReadSessionCpuArena(Ort::Session& session);

}  // namespace ebb::bench
