// ModelManager's lease state machine (model_manager_state.h): a request finds its model loaded,
// being loaded (it waits for that load), being unloaded (it waits, then loads again), broken
// (reloaded), or absent (room is made and it is loaded); it holds a lease while it runs; when the
// last lease ends the keep-alive starts, and the timer unloads the model once it runs out.
#include <algorithm>
#include <string>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/model_controls.h"
#include "memory/memory_governor.h"
#include "model/model_info.h"
#include "runtime/manager_policy.h"
#include "runtime/model_folder_check.h"
#include "runtime/model_manager_state.h"

namespace ebb {
namespace {

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

std::shared_ptr<Model> ModelManager::State::AcquireModel(const std::string& id,
                                                         const OptionList& extra,
                                                         bool explicit_load,
                                                         std::optional<bool> pin) {
  ManagedModelSpec spec;
  try {
    spec = catalog->Resolve(id);
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
    ModelOptions mo;
    for (const auto& [k, v] : opts) mo.Set(k, v);
    // The default rows only where no option chose them: an explicit decode_batch.max_rows=1 is
    // "off", and a device model refuses rows it was asked for.
    if (std::none_of(opts.begin(), opts.end(),
                     [](const auto& kv) { return kv.first == "decode_batch.max_rows"; })) {
      mo.decode_batch_default_rows = options.decode_batch_rows;
    }
    uint64_t refused = 0;
    {
      MutexUnlock unlocked(mu);  // the load runs without the lock; a throw takes it again
      internal::MemoryGovernor::TakeRefusedWeightsCharge();  // this thread's last: not ours
      try {
        model = runtime->Load(id, spec.path, mo);
      } catch (const Error& err) {
        refused = err.code() == ErrorCode::ResourceExhausted
                      ? internal::MemoryGovernor::TakeRefusedWeightsCharge()
                      : 0;
        if (refused <= need) throw;
      }
    }
    if (!model) {
      // The load charges more than its weight files (ebb's anonymous int4 repack: known once its
      // kernels exist), and memory.limit had no room for the rest: make that room as for any
      // load (releasing or evicting idle models) and load once more.
      EBB_LOG_INFO(
          "'{}' needs {} of weights, more than its files' {}: making room and loading "
          "it again",
          id, internal::FormatBytes(refused), internal::FormatBytes(need));
      entries[id].reserved_bytes = 0;  // nothing of the failed load is charged
      WaitForRoom(id, refused, "load");
      entries[id].reserved_bytes = refused;
      MutexUnlock unlocked(mu);
      model = runtime->Load(id, spec.path, mo);
    }
    MutexUnlock unlocked(mu);  // the Tier 2 settings below run without the lock, as the load
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

void ModelManager::State::ReleaseLease(const std::string& id, std::optional<KeepAlive> requested) {
  MutexLock lock(mu);
  auto it = entries.find(id);
  if (it == entries.end()) return;
  Entry& e = it->second;
  e.leases = std::max(0, e.leases - 1);
  e.last_used_unix_ms = NowUnixMs();
  const KeepAlive ka =
      internal::EffectiveKeepAlive(e.admin_keep_alive, requested, options.allow_client_keep_alive);
  if (e.leases == 0 && ka.count() >= 0) {
    e.expires = Now() + ka;
    e.expiry_set = true;
  }
  cv.notify_all();
}

void ModelManager::State::TimerLoop() {
  MutexLock lock(mu);
  while (!stop) {
    auto next = Now() + std::chrono::seconds(1);
    if (!ExpireOne(&next)) cv.wait_until(mu, RealTime(next));
  }
}

bool ModelManager::State::ExpireOne(Clock::time_point* next) {
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

void ModelManager::Lease::Reset() {
  if (!owner_) return;
  auto owner = std::move(owner_);
  model_.reset();
  if (auto state = owner->state.lock()) state->ReleaseLease(id_, keep_alive_);
}

}  // namespace ebb
