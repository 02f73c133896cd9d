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
#include "runtime/manager_policy.h"
#include "runtime/model_catalog.h"
#include "runtime/model_folder_check.h"
#include "runtime/model_manager_state.h"

namespace ebb {

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

void ModelManager::State::Emit(ManagerEvent e, const std::string& id) {
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

ManagedModel ModelManager::State::Describe(const std::string& id, const Entry* e,
                                           const std::optional<ManagedModelSpec>& spec) const {
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

ModelManager::ModelManager(Runtime& runtime, ModelManagerOptions options)
    : state_(std::make_shared<State>()) {
  state_->runtime = &runtime;
  state_->catalog = std::make_unique<internal::ModelCatalog>(options.models, options.models_dir);
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
  state_->catalog->Resolve(id);  // NotFound for an unknown id
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
  state_->catalog->Resolve(id);  // NotFound for an unknown id
  MutexLock lock(state_->mu);
  state_->entries[id].pinned = pin;
  state_->cv.notify_all();
}

std::vector<ManagedModel> ModelManager::List() const {
  std::vector<std::string> ids = state_->catalog->KnownIds();
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
      spec = state_->catalog->Resolve(id);
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
    if (it == state_->entries.end() || !it->second.model) spec = state_->catalog->Resolve(id);
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
