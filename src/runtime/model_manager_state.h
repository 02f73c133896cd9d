// ModelManager's state (include/ebb/model_manager.h), shared by its parts:
//   model_manager.cpp  the public methods, the listener, List/Get;
//   model_catalog      which ids exist and where their folders are;
//   manager_policy     the decisions: who makes room, which keep-alive a request gets;
//   model_room.cpp     carrying room-making out (weights release, eviction, waiting for room);
//   model_lease.cpp    the lease state machine: load on demand, lease, release, keep-alive
//                      expiry (the timer).
// Private to runtime/.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "core/thread_annotations.h"
#include "ebb/model_manager.h"
#include "ebb/runtime.h"
#include "runtime/model_catalog.h"

namespace ebb {

// Thread-safety: mu guards everything below it (annotated; `make thread-safety` checks it); the
// timer thread waits on cv. Calls that must run without mu (loads, unloads, the listener) run in
// a MutexUnlock scope, which takes mu again when it ends, also on a throw.
struct ModelManager::State {
  using Clock = std::chrono::steady_clock;
  static int64_t NowUnixMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  Runtime* runtime = nullptr;  // borrowed; outlives the manager
  ModelManagerOptions options;
  std::unique_ptr<internal::ModelCatalog> catalog;  // set by the constructor

  struct Entry {
    std::shared_ptr<Model> model;  // null while not loaded
    bool loading = false;
    std::exception_ptr load_error;  // the last load's failure, for the waiters of that load
    uint64_t load_generation = 0;   // bumped per finished load attempt
    int leases = 0;
    bool pinned = false;
    Clock::time_point expires{};  // when leases == 0 and a finite keep-alive is set
    bool expiry_set = false;
    int64_t last_used_unix_ms = 0;
    OptionList options;             // what it was loaded with
    KeepAlive admin_keep_alive{0};  // the model's (else the admin's) keep-alive, set at load
    // An unload (forced, evicted, expired, broken) is between taking the model out of the entry
    // and the runtime's Unload returning. A request for the id waits for it and then loads the
    // model again: it never gets the model being unloaded (a 409 "was unloaded") nor races the
    // runtime's registry with a second Load of the id (a 409 "already loaded").
    bool unloading = false;
    Tier2Settings tier2;  // RememberTier2: applied to every load
    // Weights a load in progress made room for and has not charged to memory.limit yet: two
    // loads that each found room for themselves alone must not both go ahead.
    uint64_t reserved_bytes = 0;
    bool warned_folder_gone = false;  // logged once that its folder was deleted while loaded
  };

  // Marks the end of an unload of `id` and wakes the requests waiting for it.
  void EndUnloading(const std::string& id) EBB_REQUIRES(mu) {
    entries[id].unloading = false;
    cv.notify_all();
  }

  // The manager's clock (ModelManagerOptions::clock, else steady_clock).
  Clock::time_point Now() const { return options.clock ? options.clock() : Clock::now(); }
  // The real steady time at which `t` on the manager's clock falls, for condition-variable
  // waits (the same point with the real clock). A fake clock that does not move meanwhile makes
  // the wait end by its real length; Tick wakes it earlier.
  Clock::time_point RealTime(Clock::time_point t) const {
    return options.clock ? Clock::now() + (t - Now()) : t;
  }

  mutable Mutex mu;
  std::condition_variable_any cv;  // load finished, lease ended, timer changes, stop
  std::map<std::string, Entry> entries EBB_GUARDED_BY(mu);
  bool stop EBB_GUARDED_BY(mu) = false;
  uint64_t evictions EBB_GUARDED_BY(mu) = 0;
  uint64_t expirations EBB_GUARDED_BY(mu) = 0;
  // Expiries between taking the model and announcing it (the timer's or a Tick's): Tick waits
  // for them, so what it returns to has been unloaded and announced, whoever did it.
  int expiring EBB_GUARDED_BY(mu) = 0;
  std::function<void(ManagerEvent, const std::string&)> listener EBB_GUARDED_BY(mu);
  std::thread timer;

  void Emit(ManagerEvent e, const std::string& id) EBB_EXCLUDES(mu);

  // Bytes charged to memory.limit now (weights + KV in use), and the limit.
  // Loads in progress count with the weights they made room for.
  std::pair<uint64_t, uint64_t> Usage() const EBB_REQUIRES(mu);

  // Makes `need` more bytes fit under memory.limit: first releases the file-backed weights of
  // idle models (least recently used first; they stay loaded, and their next request reads the
  // pages back), then evicts idle models, least recently used first. Caller holds mu (released
  // around each unload). Returns whether it fits.
  bool MakeRoom(const std::string& for_id, uint64_t need) EBB_REQUIRES(mu);

  // Whether a model other than `for_id` has requests or generators running, or is being
  // loaded: when they end, a model can be evicted, KV is freed, or a reservation settles.
  bool OthersRunning(const std::string& for_id) const EBB_REQUIRES(mu);

  // MakeRoom, and while it cannot but models busy now may be idle in a moment, waits for that
  // (bounded by evict_wait) rather than fail a request that a short wait would serve. Throws
  // ResourceExhausted naming what holds the memory. `what` is "load" or "use".
  void WaitForRoom(const std::string& id, uint64_t need, const char* what) EBB_REQUIRES(mu);

  std::string BusyText() const EBB_REQUIRES(mu);

  // Loads `id` if needed and takes a lease. Throws.
  std::shared_ptr<Model> AcquireModel(const std::string& id, const OptionList& extra,
                                      bool explicit_load, std::optional<bool> pin) EBB_EXCLUDES(mu);

  void ReleaseLease(const std::string& id, std::optional<KeepAlive> requested) EBB_EXCLUDES(mu);

  // The keep-alive timer: unloads idle models whose keep-alive ran out.
  void TimerLoop() EBB_EXCLUDES(mu);

  // One step of the timer (mu released around the unload): unloads one idle model whose
  // keep-alive ran out on the manager's clock and returns true, or returns false with `*next`
  // lowered to the earliest expiry still to come.
  bool ExpireOne(Clock::time_point* next) EBB_REQUIRES(mu);

  ManagedModel Describe(const std::string& id, const Entry* e,
                        const std::optional<ManagedModelSpec>& spec) const EBB_REQUIRES(mu);
};

// What a lease holds of its manager: a lease that outlives the manager releases nothing.
struct ModelManager::Lease::Owner {
  std::weak_ptr<ModelManager::State> state;
};

}  // namespace ebb
