// Whether the memory this process lives in is under pressure, from the files the kernel
// publishes (read by platform/memory_pressure.h): the cgroup's own (v2: memory.pressure,
// memory.events, memory.current against memory.high / memory.max; v1: memory.usage_in_bytes against
// memory.limit_in_bytes), else the machine's (/proc/pressure/memory, MemAvailable in
// /proc/meminfo).
//
// Why: an idle model's file-backed weights are clean page cache; the kernel reclaims them under
// pressure anyway, but by its own LRU, which also takes the pages of the model that is serving.
// Releasing the idle model's pages first (memory.release_weights_on_pressure, docs/memory.md)
// keeps the busy model's weights resident. The signal is sampled (ModelImpl reads it about once
// a second), not a PSI trigger: triggers need write access to the pressure file, which an
// unprivileged process in a container often lacks, while reading works everywhere.
//
// What counts as pressure (PressureReason), each reason named in the log:
//   - PSI: "some avg10" of the watched pressure file >= kPsiSomeAvg10Pct (10 %): tasks of the
//     cgroup (or machine) spent at least a tenth of the last 10 s waiting for memory;
//   - cgroup v2 memory.events: the "high" or "max" counter rose since the previous sample (the
//     cgroup was throttled at memory.high or hit memory.max);
//   - the cgroup's usage (page cache included) is within kHeadroomPct (5 %) of its limit
//     (memory.high, else memory.max; v1 memory.limit_in_bytes);
//   - machine-wide only: MemAvailable below kHeadroomPct of MemTotal.
//
// Thread-safety: pure functions here; the reader is platform/memory_pressure.h's.
#pragma once

#include <string>

#include "platform/memory_pressure.h"

namespace ebb::internal {

constexpr double kPsiSomeAvg10Pct = 10.0;
constexpr double kHeadroomPct = 5.0;

// The reader (where the signal is read, one reading) is the platform seam's
// (platform/memory_pressure.h); its names are used here as before.
using platform::PressureSample;
using platform::PressureSource;
using platform::ReadPressure;
using platform::ResolvePressureSource;

// Why `now` shows pressure, given the previous sample of the same source (events counters are
// compared with it); empty when there is none. Pure function.
std::string PressureReason(const PressureSample& previous, const PressureSample& now);

// The sample the next PressureReason compares against: `now`, except that a counter `now` could
// not read (-1: a file mid-rewrite, a cgroup briefly gone) keeps its value from `previous`, so a
// rise across the gap is still seen.
PressureSample NextBaseline(const PressureSample& previous, const PressureSample& now);

}  // namespace ebb::internal
