// ebb/stats.h — memory statistics, the same figures on every surface (C++, CLI, JSON).
//
// Units: bytes unless the name says otherwise. -1 means "not available" (e.g. no arena).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/export.h"

namespace ebb {

// This process, from /proc/self/status. RSS splits into anonymous, file-backed and shared-memory
// pages: rss_bytes = RssAnon + file_bytes + shmem_bytes.
struct ProcessMemory {
  int64_t rss_bytes = -1;       // VmRSS
  int64_t peak_rss_bytes = -1;  // VmHWM
  int64_t anon_bytes = -1;      // RssAnon + VmSwap: memory that only exists for this process
                                // (heap, ORT's arena, prepacked weights, KV); the OS can only
                                // swap it, never drop it
  int64_t file_bytes = -1;      // RssFile: mapped file pages (code, model files, a compiled-model
                                // cache's weights): clean, shared with other processes mapping
                                // the same file, and dropped by the OS under pressure
  int64_t shmem_bytes = -1;     // RssShmem: shared memory (shm, memfd, tmpfs mappings)
};

// ORT's arena for one device, read with OrtApi::AllocatorGetStats. `available` is false when the
// session has no arena (enable_cpu_mem_arena=0) or the arena has not allocated yet.
struct ArenaStats {
  bool available = false;
  int64_t in_use_bytes = -1;           // InUse
  int64_t total_allocated_bytes = -1;  // TotalAllocated: what the arena holds from the system
  int64_t max_in_use_bytes = -1;       // MaxInUse
  int64_t num_allocs = -1;             // NumAllocs
  int64_t num_extensions = -1;         // NumArenaExtensions
  int64_t num_shrinkages = -1;         // NumArenaShrinkages
  int64_t limit_bytes = -1;            // Limit
};

// KV memory (bytes): the one KV figure set of every surface. A model's KvPool fills every field
// (Model::kv_stats, MemoryStats::kv, ModelSummary::kv); a runtime's Stats() sums its models'
// in-use bytes and fills in_use_bytes, peak_in_use_bytes (the runtime's own peak, not a sum of
// peaks) and max_bytes (memory.limit), leaving the pool-only fields 0. See docs/memory.md.
struct KvStats {
  uint64_t in_use_bytes = 0;        // held by live generators (charged to the budgets)
  uint64_t retained_bytes = 0;      // freed but kept mapped for reuse (<= retain_limit_bytes)
  uint64_t reserved_bytes = 0;      // in_use + retained: what the pool holds from the OS
  uint64_t peak_in_use_bytes = 0;   // highest in_use_bytes since load
  uint64_t max_bytes = 0;           // the budget: kv_cache.max_bytes (a runtime: memory.limit);
                                    // 0 = none
  uint64_t retain_limit_bytes = 0;  // kv_cache.retain_bytes
  uint64_t num_allocations = 0;     // allocations (and charges) that succeeded
  uint64_t num_os_maps = 0;         // of which needed a fresh mmap
  uint64_t num_refusals = 0;        // allocations refused by the budget (a prefix cache block
                                    // that does not fit is not stored, and not counted)
};
// Where a model's weights live (docs/memory.md "Compiled-model cache"); WeightsStateName gives
// the name the JSON forms and every surface use:
//   "anonymous":   ORT's own copies (parsed, prepacked) in this process's anonymous memory; the
//                  OS cannot drop them, only swap them.
//   "file-backed": the session runs from a cache entry's mapped files (clean page-cache pages,
//                  shared by every process mapping them, dropped by the OS under pressure).
//   "released":    file-backed, and the resident pages were handed back
//                  (ModelControls::ReleaseWeights or memory.release_weights_after_s); the next
//                  request reads them back in.
//   "broken":      a mapped file was truncated or changed under the process (SIGBUS absorbed,
//                  memory/mapped_file_guard.h): every request fails until the model is loaded
//                  again (the service reloads it by itself).
//   "mixed":       a runtime's sum over models whose states differ.
enum class WeightsState { kAnonymous, kFileBacked, kReleased, kBroken, kMixed };
// "anonymous", "file-backed", "released", "broken", "mixed".
EBB_API std::string_view WeightsStateName(WeightsState state) noexcept;

struct WeightsMemory {
  WeightsState state = WeightsState::kAnonymous;
  uint64_t anon_bytes = 0;           // weights held as anonymous copies: weights_bytes when
                                     // "anonymous" (an estimate: ORT does not report it), else
                                     // ebb's int4 repack of nodes the entry had no pack for
  uint64_t file_backed_bytes = 0;    // size of the mapped entry files (data, ebb packs; 0 = anon)
  uint64_t file_resident_bytes = 0;  // resident pages of those mappings now (/proc/self/smaps)
  uint64_t num_releases = 0;         // ReleaseWeights that handed pages back
  // The load (docs/memory.md "The first load"). A runtime's Stats(): the highest of its models'.
  uint64_t load_ms = 0;               // from the start of the load to the model being ready
  uint64_t load_peak_anon_bytes = 0;  // this process's highest anonymous memory (RssAnon +
                                      // VmSwap, sampled every 10 ms) while the load ran
  // The compiled-model cache for this load: "off" (model_cache.dir=off, or no usable folder),
  // "loaded" (the session maps an entry), "building" (this load is finishing the entry in the
  // background), "built", "failed" (the background build stopped; the log says why), "skipped"
  // (the cache was not used or built this time: another process is building it, memory.limit
  // has no room for it, the optimised graph could not be written, or the process was out of
  // memory or file descriptors to read the model files, check or load the entry, or plan
  // cpu_ops; the log says which), "mixed" (a runtime whose models differ).
  std::string cache;
  uint64_t cache_build_peak_anon_bytes = 0;  // the same figure while the background build ran;
                                             // 0 until it finished ("built" or "failed")
};

// What ModelControls::ReleaseWeights did.
struct WeightsRelease {
  bool released = false;  // pages were handed back and the weights are "released"
  std::string reason;     // when not: why (anonymous weights, requests running, ...)
  uint64_t resident_before_bytes = 0;
  uint64_t resident_after_bytes = 0;
  uint64_t prefix_cache_freed_bytes = 0;  // unpinned prefix cache blocks dropped by the call
};

// A model's prefix (prompt) cache (docs/memory.md "Prefix cache"): KV of earlier requests'
// token prefixes, in blocks of `block_tokens`, reused by later requests that start with the same
// tokens. Its bytes come from the model's KV pool, so they are also in KvStats::in_use_bytes and
// charged to kv_cache.max_bytes and memory.limit. A runtime's Stats() sums its models'.
struct PrefixCacheStats {
  uint64_t max_bytes = 0;         // prefix_cache.max_bytes; 0 = off
  uint64_t bytes = 0;             // held now (<= max_bytes)
  uint64_t pinned_bytes = 0;      // of which pinned (ModelControls::PinPrefix): never evicted
  uint64_t blocks = 0;            // blocks held now
  uint32_t block_tokens = 0;      // tokens per block (the match granularity)
  uint64_t hits = 0;              // requests that reused at least one block
  uint64_t misses = 0;            // requests that looked and reused nothing
  uint64_t tokens_reused = 0;     // prompt tokens not prefilled, summed over requests
  uint64_t tokens_stored = 0;     // tokens whose KV was copied into the cache
  uint64_t evicted_blocks = 0;    // blocks dropped for room (LRU under max_bytes)
  uint64_t reclaimed_blocks = 0;  // blocks dropped to admit other memory, by a shrink or a
                                  // release (the cache gives memory back before a refusal)
};

// Adds `from`'s counters (hits, misses, tokens_reused, tokens_stored, evicted_blocks,
// reclaimed_blocks) to `into`; the byte and block figures are current values, which a caller
// sums or keeps as it means them. The one list of the counters (Runtime::Stats, ebb bench).
inline void AddPrefixCacheCounters(PrefixCacheStats& into, const PrefixCacheStats& from) {
  into.hits += from.hits;
  into.misses += from.misses;
  into.tokens_reused += from.tokens_reused;
  into.tokens_stored += from.tokens_stored;
  into.evicted_blocks += from.evicted_blocks;
  into.reclaimed_blocks += from.reclaimed_blocks;
}

// A model's compiled output constraints (json_schema, regex, grammar; docs/structured_output.md):
// each entry's grammar and the token masks it learned, kept for later requests with the same
// text, up to max_bytes (least recently used out). A runtime's Stats() sums its models'.
struct ConstraintCacheStats {
  uint64_t max_bytes = 0;         // constraint_cache.max_bytes; 0 = nothing kept
  uint64_t bytes = 0;             // held now by the entries (grammars and masks)
  uint64_t entries = 0;           // constraints held now
  uint64_t vocabulary_bytes = 0;  // the vocabulary's token bytes and trie (built on first use)
  uint64_t hits = 0;              // requests whose constraint was found compiled
  uint64_t misses = 0;            // requests that compiled theirs
  uint64_t evicted = 0;           // entries dropped for room
};

// A model's batched decode (decode_batch.*, docs/memory.md "Batched decode"): its concurrent
// generators decoded in one Run() per step. A runtime's Stats() sums its models' counters.
struct DecodeBatchStats {
  int32_t max_rows = 1;  // decode_batch.max_rows (1 = off); a runtime's: the largest of its models'
  uint64_t steps = 0;    // batched Run()s so far
  uint64_t rows = 0;     // generator tokens those steps produced (rows / steps: rows per step)
};

// ModelControls::PinPrefix / UnpinPrefix.
struct PrefixPin {
  uint64_t tokens = 0;         // tokens given
  uint64_t pinned_tokens = 0;  // of them, kept (whole blocks of PrefixCacheStats::block_tokens)
  uint64_t pinned_bytes = 0;   // all pinned blocks of the model now
  bool pinned = false;         // PinPrefix: kept now; UnpinPrefix: was pinned and is not now
};

// A model's accelerator memory (docs/memory.md "On a GPU"): where its KV lives when it runs on a
// device (WebGPU, CUDA, ...). `available` is false for a model on the CPU only. A runtime's
// Stats() sums its models' byte figures and keeps the first device's names.
struct DeviceMemory {
  bool available = false;
  std::string device;   // "webgpu:0", "cuda:0"
  std::string adapter;  // "NVIDIA H200 (NVIDIA, discrete, ...)": the adapter ebb found for the
                        // provider (WebGPU: the Vulkan device Dawn prefers); "" when unknown
  KvStats kv;           // the KV on the device: the model's KV pool (MemoryStats::kv is then 0)
  uint64_t weights_bytes = 0;    // the weights on the device: an estimate, the model's weight
                                 // files (nodes ORT leaves on the CPU keep theirs in host memory)
  int64_t ort_cache_bytes = -1;  // what ORT's buffer cache keeps between requests: 0 when
                                 // WebGPU's storageBufferCacheMode is disabled or lazyRelease
                                 // (ebb's default); -1 = not countable (simple, bucket, CUDA's
                                 // arena: ORT reports no byte figure for it)
  uint64_t used_bytes = 0;       // weights_bytes + kv.in_use_bytes + kv.retained_bytes (freed
                                 // KV buffers ebb keeps for reuse, what a device shrink frees):
                                 // what gpu_mem_limit counts
  uint64_t limit_bytes = 0;      // provider_options.EP.gpu_mem_limit; 0 = none
  std::string cache_mode;        // WebGPU: storageBufferCacheMode in force; "" elsewhere
  int64_t driver_process_bytes = -1;  // this process's GPU memory as the NVIDIA driver reports
                                      // it (NVML, all devices); -1 when not available
  int64_t driver_used_bytes = -1;     // the whole device's used memory (NVML); -1: not available
  int64_t driver_total_bytes = -1;    // the device's memory (NVML); -1: not available
};

// One model's view: its KV pool, its session's CPU arena, the shrinks ebb ran, and the process.
struct MemoryStats {
  ProcessMemory process;
  KvStats kv;           // KV in host memory (0 for a model whose KV is on a device)
  DeviceMemory device;  // the accelerator's figures (available = false on the CPU)
  ArenaStats cpu_arena;
  uint64_t num_shrinks = 0;   // shrinks ebb performed on this model (ShrinkArena and policies)
  uint64_t num_requests = 0;  // finished requests (generations) on this model
  // The shrink policies in force (Tier 2: ShrinkEvery, ShrinkAbove, memory.shrink_*), and
  // whether ORT's own per-Run shrink key is set (ebb then trims the heap after every request).
  uint32_t shrink_every = 0;          // requests; 0 = off
  uint64_t shrink_above_bytes = 0;    // process RSS; 0 = off
  bool ort_shrink_every_run = false;  // run option memory.enable_memory_arena_shrinkage set
  // The model's weights as memory.limit charges them (a runtime's Stats(): all its models'):
  // its weight files, plus ebb's int4 matmul's repacked copy where it is anonymous memory (no
  // model-cache entry to map it from; docs/cpu_ops.md "Memory").
  uint64_t weights_bytes = 0;
  WeightsMemory weights;  // a model's; a runtime's Stats() sums the byte fields of its models
  PrefixCacheStats prefix_cache;     // a model's; a runtime's Stats() sums its models'
  ConstraintCacheStats constraints;  // a model's; a runtime's Stats() sums its models'
  DecodeBatchStats decode_batch;     // a model's; a runtime's Stats() sums its models'
  // memory.limit of the runtime (a model's stats: of the runtime it belongs to); 0 = none.
  uint64_t limit_bytes = 0;
  // What is charged to memory.limit: weights_bytes + kv.in_use_bytes + device.kv.in_use_bytes (a
  // model: its own share; a runtime: every model's). A new load or generator is refused when it
  // would take this above limit_bytes. ORT's arena is not charged.
  uint64_t used_bytes = 0;
};

// Their JSON forms (ToJson) are in ebb/json.h; ReadProcessMemory() is in ebb/process_memory.h.

}  // namespace ebb
