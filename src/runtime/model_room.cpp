// ModelManager::State's room-making (model_manager_state.h): making a load's or a request's
// weights fit under memory.limit by releasing idle models' file-backed weights and evicting
// idle models (the choice is manager_policy's PlanRoom), and waiting for busy ones.
#include <string>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/model_controls.h"
#include "runtime/manager_policy.h"
#include "runtime/model_manager_state.h"

namespace ebb {

std::pair<uint64_t, uint64_t> ModelManager::State::Usage() const {
  const MemoryStats s = runtime->Stats();
  uint64_t reserved = 0;
  for (const auto& [id, e] : entries) reserved += e.reserved_bytes;
  return {s.used_bytes + reserved, s.limit_bytes};
}

bool ModelManager::State::MakeRoom(const std::string& for_id, uint64_t need) {
  for (;;) {
    const auto [used, limit] = Usage();
    if (limit == 0 || used + need <= limit) return true;
    std::vector<internal::RoomCandidate> candidates;
    for (const auto& [id, e] : entries) {
      if (!e.model) continue;
      candidates.push_back(
          {id, e.leases > 0 || e.loading || e.unloading || e.model->num_live_generators() > 0,
           e.pinned, e.model->weights_state() == WeightsState::kFileBacked, e.last_used_unix_ms});
    }
    const internal::RoomPlan plan = internal::PlanRoom(candidates, for_id);
    if (!plan.release.empty()) {
      const WeightsRelease r = entries[plan.release].model->runtime().ReleaseWeights();
      if (r.released) {
        EBB_LOG_INFO("released the weights of idle model '{}' to make room for '{}' ({} needed)",
                     plan.release, for_id, internal::FormatBytes(need));
        continue;
      }
    }
    const std::string& victim = plan.evict;
    if (victim.empty()) return false;
    Entry& e = entries[victim];
    auto model = std::move(e.model);
    e.expiry_set = false;
    e.unloading = true;
    std::string refused;  // why the runtime would not unload it
    {
      MutexUnlock unlocked(mu);
      try {
        runtime->Unload(victim, /*force=*/false);
        EBB_LOG_INFO("evicted idle model '{}' to make room for '{}' ({} needed)", victim, for_id,
                     internal::FormatBytes(need));
        model.reset();
      } catch (const Error& err) {
        refused = err.what();
      }
    }
    if (!refused.empty()) {
      // A generator started on it outside the manager: put it back and stop evicting it.
      entries[victim].model = std::move(model);
      EndUnloading(victim);
      EBB_LOG_WARN("could not evict '{}': {}", victim, refused);
      return false;
    }
    EndUnloading(victim);
    ++evictions;
    MutexUnlock unlocked(mu);
    Emit(ManagerEvent::kEvicted, victim);
  }
}

bool ModelManager::State::OthersRunning(const std::string& for_id) const {
  for (const auto& [id, e] : entries) {
    if (id == for_id) continue;
    if (e.loading || e.unloading) return true;
    if (e.model && (e.leases > 0 || e.model->num_live_generators() > 0)) return true;
  }
  return false;
}

void ModelManager::State::WaitForRoom(const std::string& id, uint64_t need, const char* what) {
  const auto deadline = Now() + options.evict_wait;
  bool fits = MakeRoom(id, need);
  while (!fits && !stop && OthersRunning(id) && Now() < deadline) {
    cv.wait_until(mu, RealTime(deadline));
    fits = MakeRoom(id, need);
  }
  if (stop) throw Error(ErrorCode::Unavailable, "the model manager is shutting down");
  if (fits) return;
  const auto [used, limit] = Usage();
  throw Error(ErrorCode::ResourceExhausted,
              std::string("cannot ") + what + " model '" + id + "': it needs " +
                  internal::FormatBytes(need) + " of weights, and memory.limit=" +
                  internal::FormatBytes(limit) + " has " + internal::FormatBytes(used) +
                  " in use by models that cannot be evicted now: " + BusyText() +
                  (options.evict_wait.count() > 0
                       ? " (waited " + FormatKeepAlive(options.evict_wait) + " for them)"
                       : std::string()) +
                  "; retry when requests finish, unload or unpin a model, or raise the "
                  "memory limit");
}

std::string ModelManager::State::BusyText() const {
  std::string s;
  for (const auto& [id, e] : entries) {
    if (!e.model) continue;
    s += (s.empty() ? "" : ", ") + id + " (" + internal::FormatBytes(e.model->weights_bytes()) +
         (e.pinned ? ", pinned" : "") +
         (e.leases > 0 ? ", " + std::to_string(e.leases) + " running" : "") + ")";
  }
  return s.empty() ? "none" : s;
}

}  // namespace ebb
