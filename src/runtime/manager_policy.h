// The model manager's decisions, as pure functions of what it knows (no locks, no I/O), so that
// each rule is stated and tested once: which loaded model gives memory back when a load or a
// request needs room, and which keep-alive a request gets. ModelManager (model_manager.cpp)
// gathers the facts under its lock and carries the decisions out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ebb/model_manager.h"

namespace ebb::internal {

// A loaded model as room-making sees it.
struct RoomCandidate {
  std::string id;
  bool busy = false;    // leased, loading, unloading, or with live generators: never touched
  bool pinned = false;  // never evicted (its file-backed weights may still be released)
  bool file_backed_weights = false;  // weights state kFileBacked: releasable in place
  int64_t last_used_unix_ms = 0;     // 0: never used
};

// The next step towards room for `for_id` (which is never chosen): `release`, the least
// recently used idle model whose file-backed weights can be released (it stays loaded; its next
// request reads the pages back), tried first; else `evict`, the least recently used idle,
// unpinned model. Empty strings: nothing to do. Ties go to the first in `candidates`.
struct RoomPlan {
  std::string release;
  std::string evict;
};
RoomPlan PlanRoom(const std::vector<RoomCandidate>& candidates, const std::string& for_id);

// The keep-alive a request gets: the model's (or the admin's) `admin` unless the request asks
// for a shorter one, or for a longer one when `allow_longer` (ModelManagerOptions::
// allow_client_keep_alive). A negative keep-alive is forever (the longest).
KeepAlive EffectiveKeepAlive(KeepAlive admin, std::optional<KeepAlive> requested,
                             bool allow_longer);

}  // namespace ebb::internal
