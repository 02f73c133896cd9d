// ebb/runtime.h — the runtime: the owner of named models, their shared memory budget, the
// process-wide arena settings and the request observers.
//
// A Runtime is what a service or an SDK holds: it loads models under ids, lists them with their
// memory figures, and unloads them without ever freeing memory under a running request. Not to
// be confused with a model's Tier 2 controls, Model::runtime() (ModelControls): those act on
// one model; this acts on the set.
//
// Process-wide by ORT's design: ONNX Runtime allows one Env per process, and the CPU arena
// options (arena.*) configure an allocator registered on that Env, so every Runtime of a process
// shares them (a second, different arena configuration is refused, naming both). Each Runtime
// has its own models, its own memory.limit and its own observers. Runtime::Default() is the
// runtime of ebb::LoadModel.
//
// Ownership: models hold the runtime's shared state, so a Model (and its generators) may
// outlive the Runtime object; the Runtime's destructor unloads its models without waiting on
// generators: calls running on other threads finish first, idle generators are detached (their
// next call fails with FailedPrecondition; the model's memory is freed when the last one is
// destroyed). A destructor never waits on an object only its caller could release.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/export.h"
#include "ebb/model.h"
#include "ebb/observer.h"
#include "ebb/options.h"
#include "ebb/stats.h"

namespace ebb {

// The runtime-scope keys of the option table (docs/options.md).
struct EBB_API RuntimeOptions {
  // memory.limit: the weights (their files' bytes plus ebb's anonymous int4 repack, charged from
  // load to unload: Model::weights_bytes) and the KV of all the runtime's models together may
  // not exceed this; 0 = no limit. ORT's arena is not charged (cap it with arena.max_mem).
  uint64_t memory_limit_bytes = 0;
  // arena.* and arena_extend_strategy, checked, as given (values keep their spelling): the
  // process-wide CPU arena, registered when the Runtime is created and used by every model that
  // loads with use_env_allocators=1 or with the same arena keys.
  std::map<std::string, std::string> arena;

  // Sets one runtime key. Throws ebb::Error(InvalidArgument) for a bad value, an unknown key
  // (with a suggestion) or a key of another scope (naming where it belongs).
  void Set(std::string_view key, std::string_view value);
};

// One model of a runtime, as List() reports it. Units: bytes unless the name says otherwise.
struct ModelSummary {
  std::string id;
  std::filesystem::path path;
  std::string type;                  // genai_config model.type (config.json model_type)
  bool is_encoder = false;           // an embedding model (ebb::Embed), no KV cache
  std::string kernels;               // ModelInfo::kernels: what its matmuls and attention run on
  uint64_t weights_bytes = 0;        // Model::weights_bytes: files (+ ebb's anonymous repack)
  WeightsMemory weights;             // anonymous, file-backed or released (ebb/stats.h)
  KvStats kv;                        // the model's KV pool in host memory (ebb/stats.h)
  DeviceMemory device;               // its accelerator's figures, the KV there (ebb/stats.h)
  PrefixCacheStats prefix_cache;     // the model's prefix cache (its bytes are also in kv)
  ConstraintCacheStats constraints;  // the model's compiled output constraints
  DecodeBatchStats decode_batch;     // the model's batched decode of concurrent generators
  ArenaStats cpu_arena;              // the session's CPU arena (or the shared env arena)
  int live_generators = 0;           // generators alive now (requests running or held open)
  uint64_t requests_served = 0;      // finished requests
  int64_t last_used_unix_ms = 0;     // end of the last request; 0 = none yet
};

// Loads `dir` (a folder with genai_config.json, the ONNX model and optionally tokenizer.json; or
// an encoder's sentence-transformers / Hugging Face ONNX export, see docs/embeddings.md) into
// Runtime::Default() under an automatic id ("#1", "#2", ...), held weakly: the caller owns the
// model, and it leaves the runtime's list when the last reference goes. Encoders
// (ModelInfo::is_encoder) serve ebb::Embed (ebb/embedding.h); generators on them are refused.
// Throws ebb::Error: NotFound for missing files, InvalidArgument for a corrupt model, a bad config
// field or a bad option (the message names file and field/key). Declared here, with the runtime
// it loads into (it was Model::Load before 0.2; CHANGELOG.md).
EBB_API std::shared_ptr<Model> LoadModel(const std::filesystem::path& dir,
                                         const ModelOptions& options = {});

class EBB_API Runtime {
 public:
  // Registers the process-wide CPU arena when `options.arena` is set (InvalidArgument when ORT
  // refuses it or another configuration is in use).
  explicit Runtime(const RuntimeOptions& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The runtime that ebb::LoadModel uses; created on first use, never destroyed.
  static Runtime& Default();

  // Loads `dir` under `id` (letters, digits and ._-:, 1 to 128 characters). Throws
  // InvalidArgument for a bad id and FailedPrecondition when the id is taken (unload it first),
  // and whatever ebb::LoadModel throws. On failure the registry is unchanged.
  std::shared_ptr<Model> Load(const std::string& id, const std::filesystem::path& dir,
                              const ModelOptions& options = {});
  // The model under `id`; NotFound (listing the ids) when there is none.
  std::shared_ptr<Model> Get(const std::string& id) const;
  bool Contains(const std::string& id) const;
  // Removes `id` and frees its session, KV and arena.
  // force=false: refused with FailedPrecondition, naming the count, while generators are alive;
  //              nothing changes then.
  // force=true:  the id leaves the registry at once (no new request can find it), new
  //              generators on the model are refused, and the call waits for every running
  //              call and for every open generation (started, not done) whose last call ran on
  //              another thread; generators still alive then (idle ones, and those of the
  //              calling thread, which could not progress while it waits) are detached: their
  //              next call fails with FailedPrecondition, and the model's memory is freed when
  //              the last of them is destroyed (at once when none is alive). Holders of the
  //              shared_ptr keep a valid but unloaded model.
  // NotFound when there is no such id.
  void Unload(const std::string& id, bool force = false);
  // Every loaded model, by id.
  std::vector<ModelSummary> List() const;

  // memory.limit for this runtime's models (0 = none): weights + KV. A load whose weights would
  // go over it, and a generator whose KV would, are refused with ResourceExhausted naming the
  // bytes needed, in use and allowed; running generators are unaffected. The per-model
  // kv_cache.max_bytes applies as well. Lowering it below what is in use refuses new work only.
  void SetMemoryLimit(uint64_t bytes);
  uint64_t memory_limit() const;
  const RuntimeOptions& options() const;

  // Process figures, KV and weights summed over this runtime's models, memory.limit
  // (limit_bytes) and what is charged to it (used_bytes = weights_bytes + kv.in_use_bytes, read
  // in one step so the three agree). cpu_arena: see List() or Model::memory_stats for a model's
  // arena.
  MemoryStats Stats() const;
  int num_models() const;

  // Observers see every request of every model of this runtime (ebb/observer.h).
  void AddObserver(std::shared_ptr<RequestObserver> observer);
  void RemoveObserver(const RequestObserver* observer);

 private:
  // LoadModel loads into Default() under an automatic id, held weakly.
  friend std::shared_ptr<Model> LoadModel(const std::filesystem::path& dir,
                                          const ModelOptions& options);
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ebb
