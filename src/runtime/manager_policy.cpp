#include "runtime/manager_policy.h"

#include <climits>

namespace ebb::internal {

RoomPlan PlanRoom(const std::vector<RoomCandidate>& candidates, const std::string& for_id) {
  RoomPlan plan;
  int64_t oldest_release = INT64_MAX;
  int64_t oldest_evict = INT64_MAX;
  for (const RoomCandidate& c : candidates) {
    if (c.busy || c.id == for_id) continue;
    if (c.file_backed_weights && c.last_used_unix_ms < oldest_release) {
      oldest_release = c.last_used_unix_ms;
      plan.release = c.id;
    }
    if (!c.pinned && c.last_used_unix_ms < oldest_evict) {
      oldest_evict = c.last_used_unix_ms;
      plan.evict = c.id;
    }
  }
  return plan;
}

KeepAlive EffectiveKeepAlive(KeepAlive admin, std::optional<KeepAlive> requested,
                             bool allow_longer) {
  if (!requested) return admin;
  const auto longer = [](KeepAlive a, KeepAlive b) {  // a strictly longer than b
    if (a.count() < 0) return b.count() >= 0;
    if (b.count() < 0) return false;
    return a > b;
  };
  if (longer(*requested, admin) && !allow_longer) return admin;
  return *requested;
}

}  // namespace ebb::internal
