// ebb/model_controls.h — Tier 2 controls of a loaded model, with no reload: shrink now, shrink
// once after the next request, shrink every N requests, run options, statistics.
//
// A "request" is one generation (a generator reaching done(), or destroyed before that), not
// one token, or one ebb::Embed call on an encoder. A shrink gives back what ORT's CPU arena holds
// but does not use (ORT shrinks only at the end of a Run() carrying
// memory.enable_memory_arena_shrinkage, so an idle model runs one minimal step to trigger it),
// unmaps the KV pool's retained blocks, and trims the heap (malloc_trim). A model without a CPU
// arena (enable_cpu_mem_arena=0) skips the arena part: ORT refuses to shrink a device that has no
// arena.
// Ownership: owned by its Model (Model::runtime()); valid while the
// model lives. Implemented in src/model/ (model_controls.cpp), beside the model it controls.
// Thread-safety: every method may be called from any thread while generations run.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "ebb/export.h"
#include "ebb/stats.h"

namespace ebb {

class Model;

class EBB_API ModelControls {
 public:
  // Shrinks now when no Run() is in flight on this model (a minimal one-token step); otherwise
  // the shrink rides on the end of the next step of a running generator. Errors from the
  // minimal step (e.g. the KV budget refusing one token) are logged, not thrown: the KV pool and
  // the heap are still trimmed. It also drops the unpinned prefix cache at once (as
  // ShrinkAfterNextRun, ShrinkAbove and ReleaseWeights do; ShrinkEvery does not).
  void ShrinkArena();
  // Hands back the resident pages of the model's weights when they are file-backed (loaded from
  // a compiled-model cache entry) and no request is running: madvise(MADV_PAGEOUT) on the entry's
  // mappings, and memory.limit stops charging them until the next request, which reads them back
  // in (identical results; its first token is slower, docs/benchmarks.md). Does nothing, and says
  // why in the result, for anonymous weights (no cache entry) or while requests run.
  WeightsRelease ReleaseWeights();
  // The prefix cache (docs/memory.md "Prefix cache"). PinPrefix prefills `tokens` (those of
  // their whole blocks not stored yet) and keeps their whole blocks until UnpinPrefix: a system
  // prompt that every request starts with. Pinned blocks count against prefix_cache.max_bytes
  // and are never evicted or dropped by shrinks, releases or memory pressure. Throws
  // FailedPrecondition when prefix_cache.max_bytes is 0, InvalidArgument for fewer tokens than
  // one block or a bad token, ResourceExhausted when the blocks do not fit (nothing pinned).
  PrefixPin PinPrefix(std::span<const int32_t> tokens);
  PrefixPin UnpinPrefix(std::span<const int32_t> tokens);
  // Drops every unpinned block now; returns the bytes freed.
  uint64_t DropPrefixCache();
  // Tier 2 prefix_cache.max_bytes (also SetRunOption("prefix_cache.max_bytes", ...)): a lower
  // budget evicts at once; 0 turns the cache off (pinned blocks stay until unpinned).
  void SetPrefixCacheMaxBytes(uint64_t bytes);
  // One shot: shrink at the end of the next request.
  void ShrinkAfterNextRun();
  // Shrink at the end of every n-th request counted from this call; 0 turns it off.
  void ShrinkEvery(uint32_t n);
  // Shrink at the end of any request after which process RSS is above `bytes`; 0 turns it off.
  void ShrinkAbove(uint64_t rss_bytes);

  // A run option (Tier 2 key) for every later Run(), checked the same way on every surface and
  // at load (docs/options.md#run-options): prefix_cache.max_bytes, memory.shrink_every and
  // memory.shrink_above set the budget and policies above; anything else is an ORT run config
  // entry, passed on with a warning naming the closest documented key when ORT does not
  // document it. Throws InvalidArgument for a malformed key or value, or an ebb key that is not
  // a run option (nothing is set).
  void SetRunOption(const std::string& key, const std::string& value);
  // Restores the key's load-time value (genai_config.json's run_options, then the load
  // options), or unsets a key that had none.
  void ClearRunOption(const std::string& key);
  // The ORT run config entries in force.
  std::map<std::string, std::string> Options() const;
  // A Tier 2 key in force: its value, where it came from ("load": genai_config.json's
  // run_options or the load options; "runtime": set on this handle since the load; "default":
  // neither), and its load-time value ("" when it had none).
  struct OptionInForce {
    std::string value;
    std::string source;
    std::string at_load;
  };
  // Every ORT run config entry in force, and the typed keys: memory.shrink_every,
  // memory.shrink_above and (a decoder's) prefix_cache.max_bytes, in bytes and requests.
  std::map<std::string, OptionInForce> OptionsInForce() const;

  // The model's process, KV, device, ORT arena, weights, prefix-cache and constraint-cache
  // figures (docs/memory.md). Reads /proc: not for every token.
  MemoryStats Stats() const;

 private:
  friend class Model;
  explicit ModelControls(Model* model) : model_(model) {}
  Model* model_;  // non-owning: the model owns this handle
};

}  // namespace ebb
