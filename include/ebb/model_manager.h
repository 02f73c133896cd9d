// ebb/model_manager.h — models loaded on demand under one memory budget: what a service (and an
// SDK that serves many models) needs on top of a Runtime.
//
// A ModelManager knows which models *can* be loaded (folders under a models directory, and ids
// given explicitly), loads one on first use with the default options plus its own, keeps it for
// a keep-alive after its last request, and unloads it by a timer. When loading a model would
// take the runtime over its memory.limit (the weights of every loaded model plus their KV, see
// ebb/runtime.h), idle models are evicted least-recently-used first; a model with a running
// request (a live Lease, or a live generator) is never evicted, and a pinned one stays resident.
// If the new model still cannot fit, Acquire throws ResourceExhausted and nothing running is
// disturbed.
//
// Ids under the models directory are confined to it: an id is one folder name (letters,
// digits, '.', '_', '-', ':'; not "." or ".."), and a folder whose real path leaves the
// directory (a symlink out of it) is refused.
//
// Ownership: the manager borrows `runtime`, which must outlive it. It owns a timer thread (the
// keep-alive), stopped by its destructor; the destructor leaves loaded models in the runtime.
// Thread-safety: every method may be called from any thread. Loading runs without the
// manager's lock; two Acquire calls for one id share one load.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ebb/export.h"
#include "ebb/model.h"
#include "ebb/runtime.h"

namespace ebb {

// Full option keys in the order they are applied with ModelOptions::Set:
// "session_options.K", "provider_options.EP.K", "run_options.K", or ebb's model keys.
using OptionList = std::vector<std::pair<std::string, std::string>>;

// A keep-alive: how long a model stays loaded after its last request ends.
// kForever (negative) keeps it until it is unloaded or evicted; zero unloads it at once.
using KeepAlive = std::chrono::milliseconds;
inline constexpr KeepAlive kKeepAliveForever{-1};

// Parses a keep-alive as Ollama writes it: "5m", "30s", "1h30m", "250ms", a plain number of
// seconds ("300"), or a negative value ("-1") for forever. Throws ebb::Error(InvalidArgument)
// naming `what` and the accepted forms.
EBB_API KeepAlive ParseKeepAlive(std::string_view text, std::string_view what = "keep_alive");
// "5m0s"-style text for messages and JSON ("forever" for kKeepAliveForever).
EBB_API std::string FormatKeepAlive(KeepAlive keep_alive);

// One model the manager can load (ModelManagerOptions::models, or models.json).
struct ManagedModelSpec {
  std::filesystem::path path;
  OptionList options;                   // applied after ModelManagerOptions::defaults
  std::optional<KeepAlive> keep_alive;  // overrides ModelManagerOptions::keep_alive
  bool pin = false;                     // never evicted or unloaded by the timer
};

struct ModelManagerOptions {
  // Ids are the folder names under this directory (empty: none).
  std::filesystem::path models_dir;
  // Ids given explicitly (they win over a folder of the same name).
  std::map<std::string, ManagedModelSpec> models;
  // Applied to every model before its own options.
  OptionList defaults;
  // decode_batch.max_rows for a model whose options (defaults, its own, a load's) do not name it
  // and whose KV is in host memory (ModelOptions::decode_batch_default_rows; at most 64): ebb
  // serve's --parallel. 1 = off.
  int32_t decode_batch_rows = 1;
  KeepAlive keep_alive = std::chrono::minutes(5);
  // A request may ask for a shorter keep-alive; a longer one only when this is set.
  bool allow_client_keep_alive = false;
  // How long a load that does not fit under memory.limit waits for the requests running on
  // other models to end, so that one of them becomes idle and can be evicted (or their KV is
  // freed). Zero fails at once; the wait ends early when nothing that could free memory runs.
  std::chrono::milliseconds evict_wait = std::chrono::seconds(30);
  // The manager's clock, for keep-alive expiry and evict_wait: a steady time point, called with
  // the manager's lock held (it must be quick and must not call the manager). Empty (the
  // default) = std::chrono::steady_clock::now. A test that injects a fake clock calls
  // ModelManager::Tick() after moving it; the timer thread also re-reads it at least once a
  // second of real time.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// A model as the manager reports it.
// Tier 2 settings made through the manager (a service's PATCH /v1/models/{id}/runtime):
// remembered per id across unload, expiry and eviction, and applied again to every later load
// of the id, so a service that runs for days does not silently revert them.
struct Tier2Settings {
  std::map<std::string, std::string> run_options;  // ModelControls::SetRunOption keys
  std::optional<uint32_t> shrink_every;            // ShrinkEvery
  std::optional<uint64_t> shrink_above;            // ShrinkAbove (bytes)
};

struct ManagedModel {
  std::string id;
  std::filesystem::path path;
  bool loaded = false;
  bool pinned = false;
  int running = 0;                      // leases held now (requests running on it)
  int64_t expires_at_unix_ms = 0;       // when the keep-alive unloads it; 0 = not scheduled
                                        // (running, pinned, kept forever, or not loaded)
  int64_t last_used_unix_ms = 0;        // end of its last request; 0 = none
  std::optional<ModelSummary> summary;  // the runtime's figures, when loaded
  OptionList options;                   // what it was (or would be) loaded with
  Tier2Settings remembered;             // applied to every load (RememberTier2)
};

// What happened to a model, for a service's counters and logs.
enum class ManagerEvent { kLoaded, kEvicted, kExpired, kUnloaded };
EBB_API std::string_view ManagerEventName(ManagerEvent event);  // "loaded", "evicted", ...

class EBB_API ModelManager {
 public:
  // Reads nothing yet: ids under models_dir are resolved on use. Throws InvalidArgument for an
  // explicit id that is not valid, or a models_dir that is not a folder.
  ModelManager(Runtime& runtime, ModelManagerOptions options);
  ~ModelManager();
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // A model in use. While a Lease lives its model is neither evicted nor unloaded by the timer;
  // its keep-alive starts when the last lease ends. Move-only.
  class EBB_API Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    const std::shared_ptr<Model>& model() const { return model_; }
    Model* operator->() const { return model_.get(); }
    explicit operator bool() const { return model_ != nullptr; }
    // Ends the lease now (idempotent).
    void Reset();

   private:
    friend class ModelManager;
    struct Owner;
    std::shared_ptr<Owner> owner_;
    std::shared_ptr<Model> model_;
    std::string id_;
    std::optional<KeepAlive> keep_alive_;
  };

  // The model `id`, loaded now when it is not (evicting idle models to fit). `keep_alive`: what
  // the request asks for (shorter than the admin's always; longer only when allowed).
  // Throws NotFound (no such id; the message lists the ids it knows), InvalidArgument (a bad
  // id, a path that leaves the models directory), ResourceExhausted (it cannot fit even after
  // evicting every idle model; names what is loaded and busy), and whatever Runtime::Load
  // throws.
  Lease Acquire(const std::string& id, std::optional<KeepAlive> keep_alive = std::nullopt);

  // Loads `id` with `extra` options after its own (Acquire's path, then released at once, so
  // its keep-alive starts). `pin` pins or unpins it. When it is already loaded with the same
  // options this only updates keep-alive and pin; with other options it is FailedPrecondition
  // (unload it first).
  std::shared_ptr<Model> Load(const std::string& id, const OptionList& extra = {},
                              std::optional<KeepAlive> keep_alive = std::nullopt,
                              std::optional<bool> pin = std::nullopt);
  // Unloads `id` (Runtime::Unload semantics: without force, FailedPrecondition while requests
  // run; with force, waits for them). NotFound when it is not loaded.
  void Unload(const std::string& id, bool force = false);
  void Pin(const std::string& id, bool pin);
  // Remembers Tier 2 settings for `id` (a run option with no value is forgotten), to apply to
  // every later load of it; the caller applies them to the loaded model itself. NotFound for an
  // unknown id.
  void RememberTier2(const std::string& id,
                     const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
                     std::optional<uint32_t> shrink_every, std::optional<uint64_t> shrink_above);

  // Checks now, loading nothing, what would make a model fail every load, so that a service
  // refuses to start rather than failing every request: for each explicit id (`models`), its
  // genai_config.json, its chat_template option, and the execution providers it would run on
  // (the config's list, or the defaults' and its own execution_provider / provider_options:
  // each must be in this ONNX Runtime build and take its options); for ids under models_dir
  // (resolved on use), the providers the default options name. Throws the load's error with the
  // id (or "the default options") in front: Unavailable for a provider this build cannot serve,
  // InvalidArgument / NotFound for a template or config that does not load.
  void CheckModels() const;

  // Every model it knows (explicit ids, folders under models_dir) and every loaded one, by id.
  std::vector<ManagedModel> List() const;
  // One model (NotFound as in Acquire).
  ManagedModel Get(const std::string& id) const;

  // Runs the keep-alive timer's check now, on the calling thread: unloads every idle model
  // whose keep-alive has run out on the manager's clock (ModelManagerOptions::clock), then wakes
  // the loads waiting for room (evict_wait) to re-read the clock. The timer thread does the same
  // by itself; a test that moves an injected clock calls this instead of sleeping. On return,
  // every expiry in flight (this call's or the timer's) has unloaded and been announced.
  void Tick();

  // Counters since construction.
  uint64_t num_evictions() const;
  uint64_t num_expirations() const;

  // Called (on the thread that caused it) for every load, eviction, expiry and unload; must be
  // quick and must not call back into the manager.
  void SetEventListener(std::function<void(ManagerEvent, const std::string& id)> listener);

  Runtime& runtime() const;
  const ModelManagerOptions& options() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ebb
