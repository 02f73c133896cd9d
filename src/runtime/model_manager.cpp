// ebb::ModelManager: models on demand under the runtime's memory.limit (keep-alive, LRU
// eviction, pins). See include/ebb/model_manager.h for the contract.
#include "ebb/model_manager.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "core/thread_annotations.h"
#include "ebb/error.h"
#include "ebb/model_controls.h"
#include "model/genai_config.h"
#include "model/model_info.h"
#include "ort/session_options.h"
#include "runtime/model_folder_check.h"

namespace ebb {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool ValidManagedId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':';
  });
}

std::string OptionListText(const OptionList& list) {
  std::string s;
  for (const auto& [k, v] : list) {
    // A long value (a chat template's text) is cut: the message names the keys that differ.
    const std::string shown = v.size() > 60 ? internal::OneLine(v.substr(0, 57)) + "..." : v;
    s += (s.empty() ? "" : ", ") + k + "=" + internal::EscapeForMessage(shown, 200);
  }
  return s.empty() ? "(none)" : s;
}

}  // namespace

std::string_view ManagerEventName(ManagerEvent event) {
  switch (event) {
    case ManagerEvent::kLoaded:
      return "loaded";
    case ManagerEvent::kEvicted:
      return "evicted";
    case ManagerEvent::kExpired:
      return "expired";
    case ManagerEvent::kUnloaded:
      return "unloaded";
  }
  return "?";
}

// Thread-safety: mu guards everything below it (annotated; `make thread-safety` checks it); the
// timer thread waits on cv. Calls that must run without mu (loads, unloads, the listener) run in
// a MutexUnlock scope, which takes mu again when it ends, also on a throw.
struct ModelManager::State {
  Runtime* runtime = nullptr;  // borrowed; outlives the manager
  ModelManagerOptions options;
  std::filesystem::path models_dir_real;  // canonical models_dir; empty when none

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

  void Emit(ManagerEvent e, const std::string& id) EBB_EXCLUDES(mu) {
    std::function<void(ManagerEvent, const std::string&)> l;
    {
      MutexLock lock(mu);
      l = listener;
    }
    if (l) {
      try {
        l(e, id);
      } catch (...) {
        EBB_LOG_WARN("model manager listener threw; ignored");
      }
    }
  }

  // The spec of `id`: explicit first, then a folder under models_dir. Throws NotFound /
  // InvalidArgument.
  ManagedModelSpec Resolve(const std::string& id) const {
    if (auto it = options.models.find(id); it != options.models.end()) return it->second;
    if (!ValidManagedId(id)) {
      throw Error(ErrorCode::InvalidArgument,
                  "model id '" + internal::EscapeForMessage(id, 80) +
                      "' is not valid: use one folder name of 1 to 128 letters, digits, '.', "
                      "'_', '-' or ':' (no paths)");
    }
    if (!models_dir_real.empty()) {
      std::error_code ec;
      const auto candidate = options.models_dir / id;
      if (std::filesystem::exists(candidate, ec)) {
        const auto real = std::filesystem::canonical(candidate, ec);
        if (ec) {
          throw Error(ErrorCode::NotFound, "model '" + id + "': cannot resolve " +
                                               candidate.string() + ": " + ec.message());
        }
        const auto rel = real.lexically_relative(models_dir_real);
        if (rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
          throw Error(ErrorCode::InvalidArgument,
                      "model '" + id + "' resolves to " + real.string() +
                          ", outside the models directory " + models_dir_real.string() +
                          "; ids are confined to it (copy the model in, or give it with "
                          "--model ID=PATH)");
        }
        if (!std::filesystem::is_directory(real, ec)) {
          throw Error(ErrorCode::NotFound,
                      "model '" + id + "': " + real.string() + " is not a model folder");
        }
        return ManagedModelSpec{real, {}, std::nullopt, false};
      }
    }
    throw Error(ErrorCode::NotFound, "model '" + id + "' does not exist; known models: " +
                                         KnownIdsText() + " (see GET /v1/models)");
  }

  std::vector<std::string> KnownIds() const {
    std::set<std::string> ids;
    for (const auto& [id, spec] : options.models) ids.insert(id);
    if (!models_dir_real.empty()) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(models_dir_real, ec)) {
        const std::string name = e.path().filename().string();
        if (!ValidManagedId(name) || !e.is_directory(ec)) continue;
        // A symlink out of the directory is not a model of it (Resolve refuses it too).
        const auto real = std::filesystem::canonical(e.path(), ec);
        const auto rel = real.lexically_relative(models_dir_real);
        if (ec || rel.empty() || *rel.begin() == "..") continue;
        if (internal::LooksLikeModelFolder(e.path())) ids.insert(name);
      }
    }
    return {ids.begin(), ids.end()};
  }
  std::string KnownIdsText() const {
    std::string s;
    for (const auto& id : KnownIds()) s += (s.empty() ? "" : ", ") + id;
    return s.empty() ? "(none)" : s;
  }

  // The keep-alive a request gets: the model's (or the admin's) unless the request asks for a
  // shorter one, or a longer one where allowed.
  KeepAlive Effective(KeepAlive admin, std::optional<KeepAlive> requested) const {
    if (!requested) return admin;
    const auto longer = [](KeepAlive a, KeepAlive b) {  // a strictly longer than b
      if (a.count() < 0) return b.count() >= 0;
      if (b.count() < 0) return false;
      return a > b;
    };
    if (longer(*requested, admin) && !options.allow_client_keep_alive) return admin;
    return *requested;
  }

  // Bytes charged to memory.limit now (weights + KV in use), and the limit.
  // Loads in progress count with the weights they made room for.
  std::pair<uint64_t, uint64_t> Usage() const EBB_REQUIRES(mu) {
    const MemoryStats s = runtime->Stats();
    uint64_t reserved = 0;
    for (const auto& [id, e] : entries) reserved += e.reserved_bytes;
    return {s.used_bytes + reserved, s.limit_bytes};
  }

  // Makes `need` more bytes fit under memory.limit: first releases the file-backed weights of
  // idle models (least recently used first; they stay loaded, and their next request reads the
  // pages back), then evicts idle models, least recently used first. Caller holds mu (released
  // around each unload). Returns whether it fits.
  bool MakeRoom(const std::string& for_id, uint64_t need) EBB_REQUIRES(mu) {
    for (;;) {
      const auto [used, limit] = Usage();
      if (limit == 0 || used + need <= limit) return true;
      std::string to_release;
      int64_t oldest_release = INT64_MAX;
      for (const auto& [id, e] : entries) {
        if (!e.model || e.leases > 0 || e.loading || e.unloading || id == for_id) continue;
        if (e.model->num_live_generators() > 0) continue;
        if (e.model->weights_state() != WeightsState::kFileBacked) continue;
        if (e.last_used_unix_ms < oldest_release) {
          oldest_release = e.last_used_unix_ms;
          to_release = id;
        }
      }
      if (!to_release.empty()) {
        const WeightsRelease r = entries[to_release].model->runtime().ReleaseWeights();
        if (r.released) {
          EBB_LOG_INFO("released the weights of idle model '{}' to make room for '{}' ({} needed)",
                       to_release, for_id, internal::FormatBytes(need));
          continue;
        }
      }
      // Idle: loaded, no lease, not pinned, not loading, no live generator.
      std::string victim;
      int64_t oldest = INT64_MAX;
      for (const auto& [id, e] : entries) {
        if (!e.model || e.leases > 0 || e.pinned || e.loading || e.unloading || id == for_id) {
          continue;
        }
        if (e.model->num_live_generators() > 0) continue;
        if (e.last_used_unix_ms < oldest) {
          oldest = e.last_used_unix_ms;
          victim = id;
        }
      }
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

  // Whether a model other than `for_id` has requests or generators running, or is being
  // loaded: when they end, a model can be evicted, KV is freed, or a reservation settles.
  bool OthersRunning(const std::string& for_id) const EBB_REQUIRES(mu) {
    for (const auto& [id, e] : entries) {
      if (id == for_id) continue;
      if (e.loading || e.unloading) return true;
      if (e.model && (e.leases > 0 || e.model->num_live_generators() > 0)) return true;
    }
    return false;
  }

  // MakeRoom, and while it cannot but models busy now may be idle in a moment, waits for that
  // (bounded by evict_wait) rather than fail a request that a short wait would serve. Throws
  // ResourceExhausted naming what holds the memory. `what` is "load" or "use".
  void WaitForRoom(const std::string& id, uint64_t need, const char* what) EBB_REQUIRES(mu) {
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

  std::string BusyText() const EBB_REQUIRES(mu) {
    std::string s;
    for (const auto& [id, e] : entries) {
      if (!e.model) continue;
      s += (s.empty() ? "" : ", ") + id + " (" + internal::FormatBytes(e.model->weights_bytes()) +
           (e.pinned ? ", pinned" : "") +
           (e.leases > 0 ? ", " + std::to_string(e.leases) + " running" : "") + ")";
    }
    return s.empty() ? "none" : s;
  }

  // Loads `id` if needed and takes a lease. Throws.
  std::shared_ptr<Model> AcquireModel(const std::string& id, const OptionList& extra,
                                      bool explicit_load, std::optional<bool> pin)
      EBB_EXCLUDES(mu) {
    ManagedModelSpec spec;
    try {
      spec = Resolve(id);
    } catch (const Error& err) {
      // The folder of a loaded model was deleted (or renamed): the loaded model keeps serving
      // until it is unloaded, as a process that has a file open keeps reading it; it is still
      // charged to memory.limit. Once unloaded, the id is gone.
      if (err.code() != ErrorCode::NotFound || explicit_load) throw;
      MutexLock lock(mu);
      auto it = entries.find(id);
      if (it == entries.end() || !it->second.model || it->second.unloading) throw;
      Entry& e = it->second;
      if (!e.warned_folder_gone) {
        EBB_LOG_WARN(
            "model '{}': its folder is gone ({}); the loaded model keeps serving until "
            "it is unloaded, and cannot be loaded again",
            id, err.what());
        e.warned_folder_gone = true;
      }
      ++e.leases;
      e.expiry_set = false;
      if (pin) e.pinned = *pin;
      return e.model;
    }
    OptionList opts = options.defaults;
    opts.insert(opts.end(), spec.options.begin(), spec.options.end());
    opts.insert(opts.end(), extra.begin(), extra.end());

    MutexLock lock(mu);
    Entry& e = entries[id];
    for (;;) {
      if (e.unloading) {
        while (!stop && e.unloading) cv.wait(mu);
        if (stop) throw Error(ErrorCode::Unavailable, "the model manager is shutting down");
        continue;
      }
      if (e.model && e.leases == 0 && e.model->num_live_generators() == 0 &&
          e.model->weights_state() == WeightsState::kBroken) {
        // Its cache file changed under it (weights state "broken"): load it again, which finds
        // the entry changed, rebuilds it, and serves correct results meanwhile.
        EBB_LOG_WARN("reloading model '{}': a weights file it maps was truncated or changed", id);
        auto broken = std::move(e.model);
        e.unloading = true;
        {
          MutexUnlock unlocked(mu);
          try {
            runtime->Unload(id, /*force=*/true);
          } catch (const Error& err) {
            EBB_LOG_WARN("unloading broken model '{}': {}", id, err.what());
          }
          broken.reset();
        }
        EndUnloading(id);
        continue;
      }
      if (e.model) {
        if (explicit_load && !extra.empty() && e.options != opts) {
          throw Error(ErrorCode::FailedPrecondition,
                      "model '" + id + "' is loaded with other options (" +
                          OptionListText(e.options) + "); unload it first to load it with " +
                          OptionListText(opts));
        }
        if (e.model->weights_state() == WeightsState::kReleased) {
          // Its next request charges the weights again: make room for them now, as for a load,
          // holding a lease so that no unload or expiry takes it while this waits.
          ++e.leases;
          try {
            WaitForRoom(id, e.model->weights_bytes(), "use");
          } catch (...) {
            --e.leases;
            cv.notify_all();
            throw;
          }
          --e.leases;
          // A forced unload that began while this waited (it waits for leases): wait for it
          // too, then load again, as any request that finds the entry unloading does.
          if (e.unloading) {
            cv.notify_all();
            continue;
          }
        }
        ++e.leases;
        e.expiry_set = false;
        if (pin) e.pinned = *pin;
        return e.model;
      }
      if (!e.loading) break;
      const uint64_t gen = e.load_generation;
      while (!stop && e.load_generation == gen) cv.wait(mu);
      if (stop) throw Error(ErrorCode::Unavailable, "the model manager is shutting down");
      if (!e.model && e.load_error) std::rethrow_exception(e.load_error);
    }
    e.loading = true;
    e.load_error = nullptr;
    std::shared_ptr<Model> model;
    try {
      // Check that the folder is a model, and that nothing it names leaves it, before evicting
      // anything for it.
      internal::CheckModelFolderConfined(spec.path);
      const uint64_t need = internal::EstimateWeightsBytes(spec.path);
      WaitForRoom(id, need, "load");
      e.reserved_bytes = need;
      const Tier2Settings tier2 = e.tier2;
      MutexUnlock unlocked(mu);  // the load runs without the lock; a throw takes it again
      ModelOptions mo;
      for (const auto& [k, v] : opts) mo.Set(k, v);
      model = runtime->Load(id, spec.path, mo);
      // The Tier 2 settings made through the service before an unload, expiry or eviction
      // (they were checked when they were made).
      ModelControls& h = model->runtime();
      for (const auto& [k, v] : tier2.run_options) h.SetRunOption(k, v);
      if (tier2.shrink_every) h.ShrinkEvery(*tier2.shrink_every);
      if (tier2.shrink_above) h.ShrinkAbove(*tier2.shrink_above);
      if (!tier2.run_options.empty() || tier2.shrink_every || tier2.shrink_above) {
        EBB_LOG_INFO("'{}': applied the Tier 2 settings remembered for it", id);
      }
    } catch (...) {
      Entry& f = entries[id];
      f.loading = false;
      f.reserved_bytes = 0;
      f.load_error = std::current_exception();
      ++f.load_generation;
      cv.notify_all();  // waiters hold references to the entry: it stays
      throw;
    }
    Entry& f = entries[id];
    f.model = model;
    f.loading = false;
    f.reserved_bytes = 0;  // charged to memory.limit by the load itself now
    f.warned_folder_gone = false;
    f.load_error = nullptr;
    ++f.load_generation;
    f.options = opts;
    f.admin_keep_alive = spec.keep_alive.value_or(options.keep_alive);
    f.pinned = pin.value_or(spec.pin || f.pinned);
    ++f.leases;
    f.expiry_set = false;
    cv.notify_all();
    lock.Unlock();
    // internal::BuildModel logged the load (with its time and memory): no second line here.
    Emit(ManagerEvent::kLoaded, id);
    return model;
  }

  void ReleaseLease(const std::string& id, std::optional<KeepAlive> requested) EBB_EXCLUDES(mu) {
    MutexLock lock(mu);
    auto it = entries.find(id);
    if (it == entries.end()) return;
    Entry& e = it->second;
    e.leases = std::max(0, e.leases - 1);
    e.last_used_unix_ms = NowUnixMs();
    const KeepAlive ka = Effective(e.admin_keep_alive, requested);
    if (e.leases == 0 && ka.count() >= 0) {
      e.expires = Now() + ka;
      e.expiry_set = true;
    }
    cv.notify_all();
  }

  // The keep-alive timer: unloads idle models whose keep-alive ran out.
  void TimerLoop() EBB_EXCLUDES(mu) {
    MutexLock lock(mu);
    while (!stop) {
      auto next = Now() + std::chrono::seconds(1);
      if (!ExpireOne(&next)) cv.wait_until(mu, RealTime(next));
    }
  }

  // One step of the timer (mu released around the unload): unloads one idle model whose
  // keep-alive ran out on the manager's clock and returns true, or returns false with `*next`
  // lowered to the earliest expiry still to come.
  bool ExpireOne(Clock::time_point* next) EBB_REQUIRES(mu) {
    const auto now = Now();
    std::string due;
    for (const auto& [id, e] : entries) {
      // An entry a forced unload is waiting on (unloading, its model still in the entry until
      // its leases end) is that unload's to finish: expiring it here as well let the two
      // unloads interleave, and the second freed a model a new request had been given.
      if (!e.model || !e.expiry_set || e.leases > 0 || e.pinned || e.loading || e.unloading) {
        continue;
      }
      if (e.expires <= now) {
        due = id;
        break;
      }
      *next = std::min(*next, e.expires);
    }
    if (due.empty()) return false;
    Entry& e = entries[due];
    if (e.model->num_live_generators() > 0) {
      e.expires = now + std::chrono::seconds(1);  // someone generates outside a lease
      return true;
    }
    auto model = std::move(e.model);
    e.expiry_set = false;
    e.unloading = true;
    ++expiring;
    bool ok = true;
    {
      MutexUnlock unlocked(mu);
      EBB_LOG_INFO("keep-alive of '{}' ran out: unloading it", due);  // Unload logs "unloaded"
      try {
        runtime->Unload(due, false);
      } catch (const Error& err) {
        ok = false;
        EBB_LOG_WARN("keep-alive could not unload '{}': {}", due, err.what());
      }
      model.reset();
    }
    EndUnloading(due);
    if (!ok) {
      // Someone unloaded it already or it is busy: forget it.
      if (runtime->Contains(due)) {
        entries[due].model = runtime->Get(due);
        entries[due].expires = Now() + std::chrono::seconds(1);
        entries[due].expiry_set = true;
      }
      --expiring;
      cv.notify_all();
      return true;
    }
    ++expirations;
    {
      MutexUnlock unlocked(mu);
      Emit(ManagerEvent::kExpired, due);
    }
    --expiring;
    cv.notify_all();
    return true;
  }

  ManagedModel Describe(const std::string& id, const Entry* e,
                        const std::optional<ManagedModelSpec>& spec) const EBB_REQUIRES(mu) {
    ManagedModel m;
    m.id = id;
    if (spec) m.path = spec->path;
    if (e) {
      m.loaded = e->model != nullptr;
      m.pinned = e->pinned || (spec && spec->pin);
      m.running = e->leases;
      m.last_used_unix_ms = e->last_used_unix_ms;
      m.options = e->options;
      m.remembered = e->tier2;
      if (e->model && e->expiry_set && e->leases == 0 && !m.pinned) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(e->expires - Now());
        m.expires_at_unix_ms = NowUnixMs() + std::max<int64_t>(0, left.count());
      }
      if (e->model) m.path = e->model->info().path;
    } else if (spec) {
      m.pinned = spec->pin;
      m.options = options.defaults;
      m.options.insert(m.options.end(), spec->options.begin(), spec->options.end());
    }
    return m;
  }
};

ModelManager::Lease::Lease(Lease&& other) noexcept
    : owner_(std::move(other.owner_)),
      model_(std::move(other.model_)),
      id_(std::move(other.id_)),
      keep_alive_(other.keep_alive_) {}

ModelManager::Lease& ModelManager::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::move(other.owner_);
    model_ = std::move(other.model_);
    id_ = std::move(other.id_);
    keep_alive_ = other.keep_alive_;
  }
  return *this;
}

ModelManager::Lease::~Lease() { Reset(); }

struct ModelManager::Lease::Owner {
  std::weak_ptr<ModelManager::State> state;
};

void ModelManager::Lease::Reset() {
  if (!owner_) return;
  auto owner = std::move(owner_);
  model_.reset();
  if (auto state = owner->state.lock()) state->ReleaseLease(id_, keep_alive_);
}

ModelManager::ModelManager(Runtime& runtime, ModelManagerOptions options)
    : state_(std::make_shared<State>()) {
  state_->runtime = &runtime;
  for (const auto& [id, spec] : options.models) {
    if (!ValidManagedId(id)) {
      throw Error(ErrorCode::InvalidArgument,
                  "model id '" + internal::EscapeForMessage(id, 200) +
                      "' is not valid: use 1 to 128 letters, digits, '.', '_', '-' or ':'");
    }
  }
  if (!options.models_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(options.models_dir, ec)) {
      throw Error(ErrorCode::InvalidArgument, "the models directory " +
                                                  options.models_dir.string() +
                                                  " is not a folder; create it or fix the path");
    }
    state_->models_dir_real = std::filesystem::canonical(options.models_dir, ec);
  }
  state_->options = std::move(options);
  {
    MutexLock lock(state_->mu);  // no other thread yet; taken for the analysis
    for (const auto& [id, spec] : state_->options.models) {
      if (spec.pin) state_->entries[id].pinned = true;
    }
  }
  state_->timer = std::thread([s = state_.get()] { s->TimerLoop(); });
}

ModelManager::~ModelManager() {
  {
    MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  if (state_->timer.joinable()) state_->timer.join();
}

void ModelManager::Tick() {
  {
    MutexLock lock(state_->mu);
    // A model whose generators run outside a lease is put off by a second each time: one pass
    // over the entries at most, so Tick never spins on it.
    for (size_t i = 0, n = state_->entries.size(); i < n && !state_->stop; ++i) {
      auto next = state_->Now();
      if (!state_->ExpireOne(&next)) break;
    }
    // The timer may have taken a due model first (it wakes on its own each second): wait until
    // it has unloaded and announced it, or a caller could see the model gone but not expired.
    while (state_->expiring > 0 && !state_->stop) state_->cv.wait(state_->mu);
  }
  state_->cv.notify_all();  // the timer and the loads waiting for room re-read the clock
}

ModelManager::Lease ModelManager::Acquire(const std::string& id,
                                          std::optional<KeepAlive> keep_alive) {
  Lease lease;
  lease.model_ = state_->AcquireModel(id, {}, false, std::nullopt);
  lease.owner_ = std::make_shared<Lease::Owner>(Lease::Owner{state_});
  lease.id_ = id;
  lease.keep_alive_ = keep_alive;
  return lease;
}

std::shared_ptr<Model> ModelManager::Load(const std::string& id, const OptionList& extra,
                                          std::optional<KeepAlive> keep_alive,
                                          std::optional<bool> pin) {
  auto model = state_->AcquireModel(id, extra, true, pin);
  state_->ReleaseLease(id, keep_alive);
  return model;
}

void ModelManager::Unload(const std::string& id, bool force) {
  std::shared_ptr<Model> model;
  bool managed = false;
  {
    MutexLock lock(state_->mu);
    auto it = state_->entries.find(id);
    if (it != state_->entries.end()) {
      // A load in progress registers the model in the runtime before the entry has it: wait
      // for it (and for another unload), so the unload never frees a model that a request is
      // about to be given.
      State::Entry& e = it->second;
      while (!state_->stop && (e.loading || e.unloading)) state_->cv.wait(state_->mu);
    }
    if (it == state_->entries.end() || !it->second.model) {
      if (!state_->runtime->Contains(id)) {
        throw Error(ErrorCode::NotFound, "model '" + internal::EscapeForMessage(id, 200) +
                                             "' is not loaded; nothing to unload");
      }
    } else {
      State::Entry& e = it->second;
      if (!force && e.leases > 0) {
        throw Error(ErrorCode::FailedPrecondition,
                    "model '" + id + "' has " + std::to_string(e.leases) +
                        " running request(s); retry when they finish, or unload with force "
                        "(which waits for them)");
      }
      // No new request gets this model from now on (they wait, then load it again); the
      // running ones finish first: force waits for their leases, as documented.
      e.unloading = true;
      managed = true;
      while (e.leases != 0) state_->cv.wait(state_->mu);
      model = std::move(e.model);
      e.expiry_set = false;
    }
  }
  try {
    state_->runtime->Unload(id, force);
  } catch (...) {
    MutexLock lock(state_->mu);
    if (managed) {
      state_->entries[id].model = std::move(model);
      state_->EndUnloading(id);
    }
    throw;
  }
  model.reset();
  if (managed) {
    MutexLock lock(state_->mu);
    state_->EndUnloading(id);
  }
  state_->Emit(ManagerEvent::kUnloaded, id);
}

void ModelManager::RememberTier2(
    const std::string& id,
    const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
    std::optional<uint32_t> shrink_every, std::optional<uint64_t> shrink_above) {
  state_->Resolve(id);  // NotFound for an unknown id
  MutexLock lock(state_->mu);
  Tier2Settings& t = state_->entries[id].tier2;
  for (const auto& [k, v] : run) {
    // ebb's policy keys sent as run options are the policies (ModelControls::SetRunOption).
    if (v && k == "memory.shrink_every") {
      t.shrink_every = static_cast<uint32_t>(internal::ParseInt(k, *v, 0, UINT32_MAX));
    } else if (v && k == "memory.shrink_above") {
      t.shrink_above = ParseByteSize(*v, k);
    } else if (v) {
      t.run_options[k] = *v;
    } else {
      t.run_options.erase(k);
    }
  }
  if (shrink_every) t.shrink_every = *shrink_every;
  if (shrink_above) t.shrink_above = *shrink_above;
}

void ModelManager::Pin(const std::string& id, bool pin) {
  state_->Resolve(id);  // NotFound for an unknown id
  MutexLock lock(state_->mu);
  state_->entries[id].pinned = pin;
  state_->cv.notify_all();
}

std::vector<ManagedModel> ModelManager::List() const {
  std::vector<std::string> ids = state_->KnownIds();
  MutexLock lock(state_->mu);
  for (const auto& [id, e] : state_->entries) {
    if (e.model && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  const std::vector<ModelSummary> loaded = state_->runtime->List();
  std::vector<ManagedModel> out;
  for (const auto& id : ids) {
    std::optional<ManagedModelSpec> spec;
    try {
      spec = state_->Resolve(id);
    } catch (const Error&) {
    }
    auto it = state_->entries.find(id);
    ManagedModel m =
        state_->Describe(id, it == state_->entries.end() ? nullptr : &it->second, spec);
    for (const auto& s : loaded) {
      if (s.id == id && m.loaded) m.summary = s;
    }
    out.push_back(std::move(m));
  }
  return out;
}

ManagedModel ModelManager::Get(const std::string& id) const {
  std::optional<ManagedModelSpec> spec;
  {
    MutexLock lock(state_->mu);
    auto it = state_->entries.find(id);
    if (it == state_->entries.end() || !it->second.model) spec = state_->Resolve(id);
  }
  for (auto& m : List()) {
    if (m.id == id) return m;
  }
  if (spec) {
    MutexLock lock(state_->mu);
    return state_->Describe(id, nullptr, spec);
  }
  throw Error(ErrorCode::NotFound,
              "model '" + internal::EscapeForMessage(id, 200) + "' does not exist");
}

void ModelManager::CheckModels() const {
  const ModelManagerOptions& o = state_->options;
  auto model_options = [](const OptionList& a, const OptionList& b) {
    ModelOptions mo;
    for (const auto& [k, v] : a) mo.Set(k, v);
    for (const auto& [k, v] : b) mo.Set(k, v);
    return mo;
  };
  auto with_prefix = [](const std::string& who, const Error& e) {
    return Error(e.code(), who + " can never load: " + e.what());
  };
  // Folders under models_dir are found on use: only the defaults are known for them.
  if (!o.models_dir.empty()) {
    try {
      const ModelOptions mo = model_options(o.defaults, {});
      internal::CheckExecutionProviders({}, mo);
      // A template for every model parses (the folders' special tokens come at their loads).
      if (!mo.chat_template.empty()) {
        internal::LoadChatTemplateOption(o.models_dir, mo.chat_template);
      }
    } catch (const Error& e) {
      throw with_prefix("a model under " + o.models_dir.string() + " with the default options", e);
    }
  }
  for (const auto& [id, spec] : o.models) {
    try {
      const ModelOptions mo = model_options(o.defaults, spec.options);
      const internal::GenaiConfig cfg = internal::LoadModelFolderConfig(spec.path);
      internal::CheckExecutionProviders(cfg.provider_options, mo);
      if (!mo.chat_template.empty()) internal::LoadChatTemplateOption(cfg.dir, mo.chat_template);
    } catch (const Error& e) {
      throw with_prefix("model '" + id + "'", e);
    }
  }
}

uint64_t ModelManager::num_evictions() const {
  MutexLock lock(state_->mu);
  return state_->evictions;
}
uint64_t ModelManager::num_expirations() const {
  MutexLock lock(state_->mu);
  return state_->expirations;
}

void ModelManager::SetEventListener(
    std::function<void(ManagerEvent, const std::string& id)> listener) {
  MutexLock lock(state_->mu);
  state_->listener = std::move(listener);
}

Runtime& ModelManager::runtime() const { return *state_->runtime; }
const ModelManagerOptions& ModelManager::options() const { return state_->options; }

}  // namespace ebb
