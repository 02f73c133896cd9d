#include "memory/memory_pressure.h"

#include <algorithm>
#include <cstdio>

namespace ebb::internal {

std::string PressureReason(const PressureSample& previous, const PressureSample& now) {
  char buf[160];
  if (now.psi_some_avg10 >= kPsiSomeAvg10Pct) {
    std::snprintf(buf, sizeof buf, "memory PSI some avg10=%.2f%% (>= %.0f%%)", now.psi_some_avg10,
                  kPsiSomeAvg10Pct);
    return buf;
  }
  if (previous.events_high >= 0 && now.events_high > previous.events_high) {
    return "memory.events high rose by " + std::to_string(now.events_high - previous.events_high) +
           " (throttled at memory.high)";
  }
  if (previous.events_max >= 0 && now.events_max > previous.events_max) {
    return "memory.events max rose by " + std::to_string(now.events_max - previous.events_max) +
           " (hit memory.max)";
  }
  if (now.limit_bytes > 0 &&
      static_cast<double>(now.limit_bytes - std::min(now.usage_bytes, now.limit_bytes)) <
          static_cast<double>(now.limit_bytes) * kHeadroomPct / 100.0) {
    std::snprintf(buf, sizeof buf, "usage %.1f MiB of a %.1f MiB limit (headroom < %.0f%%)",
                  static_cast<double>(now.usage_bytes) / 1048576.0,
                  static_cast<double>(now.limit_bytes) / 1048576.0, kHeadroomPct);
    return buf;
  }
  return {};
}

PressureSample NextBaseline(const PressureSample& previous, const PressureSample& now) {
  PressureSample next = now;
  if (next.events_high < 0) next.events_high = previous.events_high;
  if (next.events_max < 0) next.events_max = previous.events_max;
  return next;
}

}  // namespace ebb::internal
