// ebb::Runtime: the registry of named models, their shared budget and observers.
#include "ebb/runtime.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "embed/embedder.h"
#include "generate/shrink_step.h"
#include "memory/memory_governor.h"
#include "memory/process_memory.h"
#include "model/model_host.h"
#include "model/model_loader.h"
#include "model/model_views.h"
#include "ort/arena_stats.h"
#include "ort/env_arena.h"
#include "ort/ort_api.h"
#include "ort/session_options.h"

namespace ebb {
namespace {

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':';
  });
}

// An idle model's minimal step: a one-token generation, or a one-token encoder Run.
void ShrinkStep(Model& model) {
  if (model.info().is_encoder) {
    internal::RunEmbedShrinkStep(model);
  } else {
    internal::RunShrinkStep(model);
  }
}

internal::ModelSteps Steps() { return {ShrinkStep, internal::RunPrefillStep}; }

}  // namespace

// The runtime's shared state. Models hold it (as their ModelHost), so it outlives every model
// of the runtime even when the Runtime object goes first.
// Thread-safety: mu_ guards the registry, obs_mu_ the observers; the governor locks itself.
struct Runtime::State final : internal::ModelHost {
  RuntimeOptions options;
  internal::MemoryGovernor gov;
  std::unique_ptr<internal::EnvArenaLease> arena;  // when options.arena is set

  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Model>> named;    // guarded by mu
  std::map<std::string, std::weak_ptr<Model>> automatic;  // guarded by mu
  uint64_t next_automatic = 1;                            // guarded by mu

  mutable std::mutex obs_mu;
  std::vector<std::shared_ptr<RequestObserver>> observers;  // guarded by obs_mu

  internal::MemoryGovernor& governor() override { return gov; }

  std::vector<std::shared_ptr<RequestObserver>> Observers() const {
    std::lock_guard<std::mutex> lock(obs_mu);
    return observers;
  }
  void NotifyRequestStart(const RequestStart& start) noexcept override {
    for (const auto& o : Observers()) {
      try {
        o->OnRequestStart(start);
      } catch (const std::exception& e) {
        EBB_LOG_WARN("request observer threw on start ({}); ignored", e.what());
      } catch (...) {
        EBB_LOG_WARN("request observer threw on start; ignored");
      }
    }
  }
  void NotifyRequestEnd(const RequestEnd& end) noexcept override {
    for (const auto& o : Observers()) {
      try {
        o->OnRequestEnd(end);
      } catch (const std::exception& e) {
        EBB_LOG_WARN("request observer threw on end ({}); ignored", e.what());
      } catch (...) {
        EBB_LOG_WARN("request observer threw on end; ignored");
      }
    }
  }

  // Every live model, named and automatic, by id. Caller holds mu.
  std::vector<std::shared_ptr<Model>> LiveLocked() const {
    std::vector<std::shared_ptr<Model>> out;
    for (const auto& [id, m] : named) out.push_back(m);
    for (const auto& [id, w] : automatic) {
      if (auto m = w.lock()) out.push_back(std::move(m));
    }
    return out;
  }
};

void RuntimeOptions::Set(std::string_view key, std::string_view value) {
  const OptionSpec* spec = FindOption(key);
  if (spec == nullptr) internal::ThrowUnknownKey(key, OptionScope::kRuntime);
  if (!HasScope(*spec, OptionScope::kRuntime)) {
    internal::ThrowWrongScope(*spec, OptionScope::kRuntime);
  }
  internal::ValidateOptionValue(*spec, value);
  if (key == "memory.limit") {
    memory_limit_bytes = ParseByteSize(value, key);
  } else {
    arena[std::string(key)] = std::string(value);
  }
}

Runtime::Runtime(const RuntimeOptions& options) : state_(std::make_shared<State>()) {
  internal::EnsureOrtApi();
  state_->options = options;
  state_->gov.set_limit(options.memory_limit_bytes);
  if (!options.arena.empty()) {
    // The same typed parsing as session options, so both spellings mean the same arena.
    ModelOptions probe;
    for (const auto& [k, v] : options.arena) probe.Set("session_options." + k, v);
    internal::ArenaConfig cfg;
    bool has_arena = true;
    internal::BuildSessionOptions(internal::EffectiveSessionOptions({}, probe), {}, probe,
                                  &has_arena, &cfg);
    state_->arena = internal::AcquireEnvArena(cfg);
  }
}

Runtime::~Runtime() {
  std::vector<std::shared_ptr<Model>> models;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (auto& [id, m] : state_->named) models.push_back(std::move(m));
    state_->named.clear();
  }
  // A destructor never waits on generators only its caller can release: running calls finish,
  // idle generators are detached (they fail on their next call and free the model's memory when
  // they are destroyed; LifecycleView::Unload).
  for (auto& m : models)
    internal::LifecycleView(*m).Unload(internal::LifecycleView::Release::kDetach);
}

Runtime& Runtime::Default() {
  // Never destroyed: models loaded with ebb::LoadModel may live until exit, and ORT's own statics
  // must not be torn down under them.
  static Runtime* r = new Runtime();
  return *r;
}

std::shared_ptr<Model> LoadModel(const std::filesystem::path& dir, const ModelOptions& options) {
  auto& state = Runtime::Default().state_;
  std::string id;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    // Appended, not "#" + string: GCC 12's -Wrestrict misfires on that at -O2.
    id = "#";
    id += std::to_string(state->next_automatic++);
  }
  auto model = internal::BuildModel(state, id, dir, options, Steps());
  std::lock_guard<std::mutex> lock(state->mu);
  // Drop entries of models that are gone, then register this one weakly: the caller owns it.
  for (auto it = state->automatic.begin(); it != state->automatic.end();) {
    it = it->second.expired() ? state->automatic.erase(it) : std::next(it);
  }
  state->automatic[id] = model;
  return model;
}

std::shared_ptr<Model> Runtime::Load(const std::string& id, const std::filesystem::path& dir,
                                     const ModelOptions& options) {
  if (!ValidId(id)) {
    throw Error(ErrorCode::InvalidArgument,
                // Escaped: a NUL or a control byte in the id would cut or garble the message.
                "model id '" + internal::EscapeForMessage(id, 200) +
                    "' is not valid: use 1 to 128 letters, digits, '.', '_', '-' or ':'");
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->named.count(id)) {
      throw Error(ErrorCode::FailedPrecondition, "a model is already loaded as '" + id +
                                                     "' (from " +
                                                     state_->named[id]->info().path.string() +
                                                     "); unload it first or pick another id");
    }
  }
  // Loading takes long; it runs without the registry lock. Two loads of one id race to the
  // insert below, and the loser is freed.
  auto model = internal::BuildModel(state_, id, dir, options, Steps());
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->named.emplace(id, model).second) {
    throw Error(ErrorCode::FailedPrecondition,
                "a model was loaded as '" + id + "' while this one loaded; unload it first");
  }
  return model;
}

std::shared_ptr<Model> Runtime::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (auto it = state_->named.find(id); it != state_->named.end()) return it->second;
  if (auto it = state_->automatic.find(id); it != state_->automatic.end()) {
    if (auto m = it->second.lock()) return m;
  }
  std::string ids;
  for (const auto& m : state_->LiveLocked()) ids += (ids.empty() ? "" : ", ") + m->id();
  throw Error(ErrorCode::NotFound, "no model '" + internal::EscapeForMessage(id, 200) +
                                       "' is loaded" +
                                       (ids.empty() ? " (none is)" : "; loaded: " + ids));
}

bool Runtime::Contains(const std::string& id) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->named.count(id) > 0;
}

void Runtime::Unload(const std::string& id, bool force) {
  std::shared_ptr<Model> model;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->named.find(id);
    if (it == state_->named.end()) {
      throw Error(ErrorCode::NotFound, "no model '" + internal::EscapeForMessage(id, 200) +
                                           "' is loaded; nothing to unload");
    }
    const int live = it->second->num_live_generators();
    if (live > 0 && !force) {
      throw Error(ErrorCode::FailedPrecondition,
                  "model '" + id + "' has " + std::to_string(live) + " live generator" +
                      (live == 1 ? "" : "s") +
                      "; finish or cancel them first, or unload with force (which waits for "
                      "generations running on other threads and detaches idle generators)");
    }
    model = std::move(it->second);
    state_->named.erase(it);
  }
  // Outside the lock: waiting here must not block other models' loads and lookups.
  internal::LifecycleView(*model).Unload();
  EBB_LOG_INFO("unloaded '{}'", id);
}

std::vector<ModelSummary> Runtime::List() const {
  std::vector<std::shared_ptr<Model>> models;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    models = state_->LiveLocked();
  }
  std::vector<ModelSummary> out;
  for (const auto& m : models) {
    ModelSummary s;
    s.id = m->id();
    s.path = m->info().path;
    s.type = m->info().type;
    s.is_encoder = m->info().is_encoder;
    s.kernels = m->info().kernels;
    s.weights_bytes = m->weights_bytes();
    const MemoryStats ms = m->runtime().Stats();
    s.kv = ms.kv;
    s.device = ms.device;
    s.cpu_arena = ms.cpu_arena;
    s.weights = ms.weights;
    s.prefix_cache = ms.prefix_cache;
    s.constraints = ms.constraints;
    s.decode_batch = ms.decode_batch;
    s.live_generators = m->num_live_generators();
    s.requests_served = ms.num_requests;
    s.last_used_unix_ms = internal::LifecycleView(*m).last_used_unix_ms();
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const ModelSummary& a, const ModelSummary& b) { return a.id < b.id; });
  return out;
}

void Runtime::SetMemoryLimit(uint64_t bytes) { state_->gov.set_limit(bytes); }
uint64_t Runtime::memory_limit() const { return state_->gov.limit(); }
const RuntimeOptions& Runtime::options() const { return state_->options; }
int Runtime::num_models() const { return state_->gov.num_models(); }

MemoryStats Runtime::Stats() const {
  MemoryStats s;
  s.process = ReadProcessMemory();
  // One reading of the governor, so that used_bytes = weights_bytes + kv.in_use_bytes holds.
  const internal::GovernorUsage u = state_->gov.Usage();
  s.kv.in_use_bytes = u.kv_in_use_bytes;
  s.kv.peak_in_use_bytes = u.kv_peak_bytes;
  s.kv.max_bytes = u.limit_bytes;
  s.weights_bytes = u.weights_bytes;
  s.limit_bytes = u.limit_bytes;
  s.used_bytes = u.used_bytes;
  // The weights' split, summed over the models ("state" says "mixed" when they differ).
  bool first = true;
  for (const ModelSummary& m : List()) {
    s.weights.anon_bytes += m.weights.anon_bytes;
    s.weights.file_backed_bytes += m.weights.file_backed_bytes;
    s.weights.file_resident_bytes += m.weights.file_resident_bytes;
    s.weights.num_releases += m.weights.num_releases;
    s.weights.load_ms = std::max(s.weights.load_ms, m.weights.load_ms);
    s.weights.load_peak_anon_bytes =
        std::max(s.weights.load_peak_anon_bytes, m.weights.load_peak_anon_bytes);
    s.weights.cache_build_peak_anon_bytes =
        std::max(s.weights.cache_build_peak_anon_bytes, m.weights.cache_build_peak_anon_bytes);
    s.weights.cache = first || s.weights.cache == m.weights.cache ? m.weights.cache : "mixed";
    PrefixCacheStats& c = s.prefix_cache;
    const PrefixCacheStats& mc = m.prefix_cache;
    c.max_bytes += mc.max_bytes;
    c.bytes += mc.bytes;
    c.pinned_bytes += mc.pinned_bytes;
    c.blocks += mc.blocks;
    c.block_tokens = mc.block_tokens;
    AddPrefixCacheCounters(c, mc);
    ConstraintCacheStats& k = s.constraints;
    const ConstraintCacheStats& mk = m.constraints;
    k.max_bytes += mk.max_bytes;
    k.bytes += mk.bytes;
    k.entries += mk.entries;
    k.vocabulary_bytes += mk.vocabulary_bytes;
    k.hits += mk.hits;
    k.misses += mk.misses;
    k.evicted += mk.evicted;
    s.decode_batch.max_rows = std::max(s.decode_batch.max_rows, m.decode_batch.max_rows);
    s.decode_batch.steps += m.decode_batch.steps;
    s.decode_batch.rows += m.decode_batch.rows;
    s.weights.state =
        first || s.weights.state == m.weights.state ? m.weights.state : WeightsState::kMixed;
    if (m.device.available) {
      DeviceMemory& d = s.device;
      const DeviceMemory& md = m.device;
      if (!d.available) {
        d.available = true;
        d.device = md.device;
        d.adapter = md.adapter;
        d.cache_mode = md.cache_mode;
        d.driver_process_bytes = md.driver_process_bytes;
        d.driver_used_bytes = md.driver_used_bytes;
        d.driver_total_bytes = md.driver_total_bytes;
        d.ort_cache_bytes = md.ort_cache_bytes;
      } else if (d.ort_cache_bytes >= 0) {
        d.ort_cache_bytes = md.ort_cache_bytes < 0 ? -1 : d.ort_cache_bytes + md.ort_cache_bytes;
      }
      d.kv.in_use_bytes += md.kv.in_use_bytes;
      d.kv.retained_bytes += md.kv.retained_bytes;
      d.kv.reserved_bytes += md.kv.reserved_bytes;
      d.kv.peak_in_use_bytes += md.kv.peak_in_use_bytes;
      d.kv.num_allocations += md.kv.num_allocations;
      d.kv.num_refusals += md.kv.num_refusals;
      d.weights_bytes += md.weights_bytes;
      d.used_bytes += md.used_bytes;
      d.limit_bytes += md.limit_bytes;
    }
    first = false;
  }
  return s;
}

void Runtime::AddObserver(std::shared_ptr<RequestObserver> observer) {
  if (!observer) throw Error(ErrorCode::InvalidArgument, "AddObserver: null observer");
  std::lock_guard<std::mutex> lock(state_->obs_mu);
  state_->observers.push_back(std::move(observer));
}

void Runtime::RemoveObserver(const RequestObserver* observer) {
  std::lock_guard<std::mutex> lock(state_->obs_mu);
  auto& v = state_->observers;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& o) { return o.get() == observer; }),
          v.end());
}

}  // namespace ebb
