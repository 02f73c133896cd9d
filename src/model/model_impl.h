// Internal state of a loaded decoder model (ebb::Model). Shared by generators.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "ebb/chat_template.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"
#include "kv/kv_pool.h"
#include "kv/kv_shape.h"
#include "kv/prefix_cache.h"
#include "memory/memory_pressure.h"
#include "memory/shrink_controller.h"
#include "model/constraint_cache.h"
#include "model/cpu_ops_rewrite.h"
#include "model/genai_config.h"
#include "model/graph_io.h"
#include "model/model_host.h"
#include "model/model_info.h"
#include "model/model_loader.h"
#include "model/run_option_ledger.h"
#include "model/step_runner.h"
#include "ort/device_target.h"
#include "ort/env_arena.h"
#include "ort/webgpu_options.h"

namespace ebb::internal {

class DecodeBatcher;    // generate/decode_batcher.h (created by it; held here type-erased)
class CacheBuilder;     // model/cache_builder.h
class MappedFileGuard;  // memory/mapped_file_guard.h

// The concrete Model. Public ebb::Model methods downcast to it (ImplOf); nothing else derives.
//
// Generator slots: every Generator holds one from its construction to its destruction (after
// its KV is returned). Release() refuses new slots, waits until none is held, then frees the
// session, the KV pool and the arena lease: no memory is freed under a running request.
// Thread-safety: the slot methods and Release() are thread-safe; the other members are set at
// load and read-only afterwards (the session and the pool are thread-safe themselves).
class ModelImpl final : public Model {
 public:
  ModelImpl() = default;
  ~ModelImpl() override;

  std::string id;
  std::shared_ptr<ModelHost> host;  // the runtime's state; outlives the model
  GenaiConfig config;
  ModelOptions options;
  ModelInfo info;
  DecoderIo io;       // decoders
  EncoderIo encoder;  // encoders (info.is_encoder)
  // Decoders: the KV geometry of one sequence (batch 1), resolved once at load from the config
  // and the graph's KV inputs; users copy it and set `batch`. Encoders: all zero.
  KvShape kv_shape;
  // What memory.limit charges for the weights: the weight files' bytes plus
  // repacked_anon_bytes.
  uint64_t weights_bytes = 0;
  // ebb's int4 matmul's repacked weights held in anonymous memory (cpu_ops without a model-cache
  // entry to map them from: pack_ledger.h); 0 otherwise.
  uint64_t repacked_anon_bytes = 0;
  // Declared before the session so that it is released after it: the env arena the session
  // allocates from must outlive the session.
  std::unique_ptr<EnvArenaLease> env_arena;
  // WebGPU: this model's hold on the process-wide device's options (ort/webgpu_options.h).
  std::unique_ptr<WebGpuContextLease> webgpu_context;
  // The accelerator the session runs on and the KV lives on (model/model_device.h); nullopt on
  // the CPU. Set at load, read-only after.
  std::optional<DeviceTarget> device;
  std::string device_adapter;     // DescribeGpuAdapter of its adapter; "" when unknown
  std::string device_cache_mode;  // WebGPU: storageBufferCacheMode in force
  std::unique_ptr<Ort::Session> session;
  // cpu_ops (cpu_ops_rewrite.h): the kinds this load moves (resolved against the CPU and the
  // graph; none on a device or for an encoder), and the nodes the session's graph runs on ebb's
  // kernels (the plan's counts, or the cached graph's; none when the rewritten graph did not load).
  CpuOpsKinds cpu_ops;
  CpuOpsPlan cpu_ops_moved;
  // The session options register ebb's built-in ebb.cpu domain (CpuOpsDecision::register_kernels):
  // also when `cpu_ops` is empty, so that a cache entry with moved nodes loads.
  bool cpu_ops_registered = false;
  // Every GroupQueryAttention of the session runs on ebb's kernel (cpu_ops, or a folder naming
  // libebb_cpu_ops.so), whose cost follows each row's valid keys, not the KV buffer's width
  // (ORT's CPU kernel's does). The batcher then lays its rows out at full width from the start
  // (decode_batcher.h). Set at load, read-only after.
  bool attention_cost_follows_keys = false;
  // Every Run() on the session goes through it (model/step_runner.h).
  StepRunner runner{*this};
  // The cache entry whose files the session maps its weights from (model_cache.h); empty: the
  // weights are ORT's anonymous copies.
  std::filesystem::path weights_entry;
  std::unique_ptr<MappedFileGuard> weights_guard;
  // Builds the cache entry after a load without one; reset (it waits) before the session.
  std::unique_ptr<CacheBuilder> cache_builder;
  // The load's figures (ebb::WeightsMemory): set by BuildModel, then by the build's end.
  uint64_t load_ms = 0;
  uint64_t load_peak_anon_bytes = 0;
  std::string cache_state;  // WeightsMemory::cache, as the load left it
  // -1 while a build runs (or none started), else 1 (built) or 0 (not built); with its peak.
  std::atomic<int> cache_build_result{-1};
  std::atomic<uint64_t> cache_build_peak_anon_bytes{0};
  Ort::MemoryInfo cpu_memory{nullptr};
  bool has_cpu_arena = true;  // enable_cpu_mem_arena (config, then user)
  bool registered = false;    // counted by the host's MemoryGovernor
  // What of weights_bytes the governor holds: the file-backed part (weights_bytes -
  // repacked_anon_bytes) while weights_charged, which ReleaseWeights hands back with the pages
  // and a request charges again; the anonymous repack while anon_weights_charged, from the load
  // to Release() (it stays in memory). ChargedWeightsBytes() is their sum.
  bool weights_charged = false;
  bool anon_weights_charged = false;
  uint64_t FileWeightsBytes() const { return weights_bytes - repacked_anon_bytes; }
  uint64_t ChargedWeightsBytes() const {
    return (weights_charged ? FileWeightsBytes() : 0) +
           (anon_weights_charged ? repacked_anon_bytes : 0);
  }
  uint64_t arena_max_mem = 0;  // arena.max_mem when set (process-wide env arena)
  std::unique_ptr<KvPool> kv_pool;
  // Decoders: KV of earlier requests' prefixes (kv/prefix_cache.h), in kv_pool's memory;
  // emptied (and its reclaimer unregistered) when the model's resources are freed, destroyed
  // before the pool (declared after it). Null for encoders.
  std::unique_ptr<PrefixCache> prefix_cache;
  uint64_t prefix_reclaimer = 0;  // its MemoryGovernor reclaimer id; 0 = none
  std::function<void(Model&, std::span<const int32_t>)> prefill_step;  // ModelSteps::prefill
  // Run options (config, then user, then ModelControls) and the shrink policies.
  std::unique_ptr<ShrinkController> shrink;
  // The one route of every run option, at load and after, and where each came from
  // (model/run_option_ledger.h); after shrink and prefix_cache, which it refers to.
  std::unique_ptr<RunOptionLedger> run_options;
  std::unique_ptr<Tokenizer> tokenizer_owned;  // null: the folder has no tokenizer.json
  // Decoders: compiled output constraints (model/constraint_cache.h), over tokenizer_owned's
  // vocabulary (declared after it). Null for encoders.
  std::unique_ptr<internal::ConstraintCache> constraints;
  // decode_batch.max_rows > 1: the batcher of concurrent generators, created on first use by
  // DecodeBatcher::ForModel; members hold it too. Freed by Release() (after every generator).
  std::mutex decode_batcher_mu;
  std::shared_ptr<DecodeBatcher> decode_batcher;  // guarded by decode_batcher_mu
  bool decode_batcher_failed = false;             // guarded by decode_batcher_mu
  // The batcher's counters (DecodeBatchStats), kept here: they outlive a batcher freed by
  // Release() and are read without the generate/ layer.
  std::atomic<uint64_t> decode_batch_steps{0};
  std::atomic<uint64_t> decode_batch_rows{0};
  std::mutex chat_template_mu;
  std::unique_ptr<ChatTemplate> chat_template_owned;  // guarded by chat_template_mu; loaded on use

  // Slots: every generator holds one for its whole life, every Embed call for the call. A slot
  // records whether a call of its holder is running (BeginCall/EndCall: always finishes) and
  // whether its generation is open (started, not done), and on which thread it last ran.
  // AcquireGeneratorSlot throws FailedPrecondition when the model was unloaded; `in_call` starts
  // the slot inside a call (Embed).
  uint64_t AcquireGeneratorSlot(bool in_call = false) EBB_EXCLUDES(slot_mu_);
  void ReleaseGeneratorSlot(uint64_t slot) noexcept EBB_EXCLUDES(slot_mu_);
  // Throws FailedPrecondition when the model was unloaded while the holder was idle (the
  // generator is detached; see Release).
  void BeginCall(uint64_t slot) EBB_EXCLUDES(slot_mu_);
  void EndCall(uint64_t slot, bool request_open) noexcept EBB_EXCLUDES(slot_mu_);
  int live_generators() const EBB_EXCLUDES(slot_mu_);
  // Unload: refuse new generators and calls, wait for the calls that are running, and for
  // kWaitForRequests also for open generations whose last call ran on another thread (a
  // generation the calling thread holds cannot progress while it waits: waiting on it would
  // hang). Generators still alive after that are detached: their next call throws
  // FailedPrecondition, and the session, arena and KV pool are freed when the last of them is
  // destroyed (or now, when none is alive). kDetach waits only for running calls: for
  // destructors (Runtime, ebb_runtime_free), which must never wait on objects only their caller
  // can release. Idempotent.
  enum class ReleaseMode { kWaitForRequests, kDetach };
  void Release(ReleaseMode mode = ReleaseMode::kWaitForRequests) EBB_EXCLUDES(slot_mu_);
  bool released() const EBB_EXCLUDES(slot_mu_);
  // Whether a mapped weights file faulted (truncated or changed under the process): the step
  // that read it computed on zero pages. CheckWeightsIntact throws Unavailable then; every
  // Run() site calls it after a successful Run, before its outputs are used.
  bool weights_broken() const;
  void CheckWeightsIntact() const;
  // ModelControls::ReleaseWeights (ebb/model_controls.h). Thread-safe; holds the slot lock
  // while it advises the kernel, so no request starts meanwhile.
  WeightsRelease ReleaseWeights() EBB_EXCLUDES(slot_mu_);
  WeightsMemory WeightsStats() const EBB_EXCLUDES(slot_mu_);
  // WeightsStats().state, without reading /proc.
  ebb::WeightsState WeightsState() const EBB_EXCLUDES(slot_mu_);
  // File-backed weights with memory.release_weights_after_s > 0 or
  // memory.release_weights_on_pressure: a thread that releases them once the model has been idle
  // that long, or when the memory it lives in is under pressure (memory/memory_pressure.h; read
  // every kPressurePollMs; released once the model has been idle for kPressureMinIdleMs within
  // kPressureMemoryMs of the pressure). Stopped by
  // Release().
  void StartWeightsRelease(int32_t after_idle_s, bool on_pressure, PressureSource pressure);
  static constexpr int64_t kPressurePollMs = 1000;
  static constexpr int64_t kPressureMinIdleMs = 1000;
  static constexpr int64_t kPressureMemoryMs = 10000;  // pressure seen while busy, kept this long
  int64_t loaded_unix_ms = 0;  // set at load; the idle clock before the first request
  // Milliseconds since the Unix epoch of the last request's end (0: none yet).
  int64_t last_used_unix_ms() const { return last_used_ms_.load(); }
  void Touch();

 private:
  // Frees the session, the batcher, the KV pool's retained memory, the arena and the heap, and
  // the weights' charge. Called once: by Release, or by the last slot of a detached model.
  void FreeResources();
  struct SlotState {
    bool in_call = false;
    bool request_open = false;
    bool detached = false;   // by Release: every later call is refused
    std::thread::id thread;  // of the last BeginCall (or the acquire)
  };
  // slot_mu_ is ebb::Mutex (core/thread_annotations.h) so that `make thread-safety` checks
  // these; its condition variables are condition_variable_any, waited on with it.
  mutable Mutex slot_mu_;
  std::condition_variable_any slot_cv_;
  std::map<uint64_t, SlotState> slots_ EBB_GUARDED_BY(slot_mu_);
  uint64_t next_slot_ EBB_GUARDED_BY(slot_mu_) = 1;
  bool released_ EBB_GUARDED_BY(slot_mu_) = false;
  bool free_on_last_slot_ EBB_GUARDED_BY(slot_mu_) = false;
  // File-backed weights whose pages were released; charged to memory.limit again (and so
  // "active") when the next generator takes a slot.
  bool weights_released_ EBB_GUARDED_BY(slot_mu_) = false;
  uint64_t num_weight_releases_ EBB_GUARDED_BY(slot_mu_) = 0;
  bool stop_idle_release_ EBB_GUARDED_BY(slot_mu_) = false;
  std::condition_variable_any idle_cv_;
  std::thread idle_release_thread_;
  std::atomic<int64_t> last_used_ms_{0};
};

inline ModelImpl& ImplOf(Model& m) { return static_cast<ModelImpl&>(m); }
inline const ModelImpl& ImplOf(const Model& m) { return static_cast<const ModelImpl&>(m); }

}  // namespace ebb::internal
