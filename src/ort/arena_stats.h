// Reads ORT's arena figures for a session's CPU allocator (OrtApi::AllocatorGetStats).
#pragma once

#include <onnxruntime_cxx_api.h>

#include "ebb/stats.h"

namespace ebb::internal {

// Never throws: an allocator without stats (arena off, or none allocated yet) gives
// available=false.
ArenaStats ReadCpuArenaStats(const Ort::Session& session, const Ort::MemoryInfo& cpu);

}  // namespace ebb::internal
