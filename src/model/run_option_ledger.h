// The one route of a run option (a Tier 2 key) on every surface, and the record of where each
// value in force came from (docs/options.md#run-options).
//
// Contract:
// - Set() checks a key the same way whatever the surface: at load (genai_config.json's
//   run_options, then the user's from the CLI, the C ABI, Python or an HTTP load body) and later
//   (ModelControls: C++, C, Python, HTTP PATCH, CLI). Malformed keys and values, and ebb keys
//   that are not run options, throw InvalidArgument naming the key (nothing is set); a key the
//   pinned ORT does not document is passed on with a warning that suggests the closest key.
//   prefix_cache.max_bytes goes to the prefix cache, memory.shrink_every and memory.shrink_above
//   to the shrink policies, everything else to ORT's run config (ShrinkController).
// - SealLoad() records the values in force once the load has applied its options: they are the
//   load-time values. Clear() restores a key's load-time value (or unsets a key that had none).
// - InForce() lists every key set and the three typed keys, with their source.
// Ownership: a member of its model (ModelImpl); it refers to the model's shrink controller and
// prefix cache (null for an encoder), which outlive it.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/thread_annotations.h"
#include "ebb/model_controls.h"

namespace ebb::internal {

class PrefixCache;
class ShrinkController;

class RunOptionLedger {
 public:
  RunOptionLedger(std::string model_id, ShrinkController& shrink, PrefixCache* prefix_cache)
      : model_id_(std::move(model_id)), shrink_(shrink), prefix_cache_(prefix_cache) {}

  void Set(const std::string& key, const std::string& value) EBB_EXCLUDES(mu_);
  void SealLoad() EBB_EXCLUDES(mu_);
  void Clear(const std::string& key) EBB_EXCLUDES(mu_);
  std::map<std::string, ModelControls::OptionInForce> InForce() const EBB_EXCLUDES(mu_);

 private:
  // Applies without recording (Set and Clear record).
  void Apply(const std::string& key, const std::string& value);
  // The value in force of a typed key, or nullopt for an ORT key.
  std::map<std::string, std::string> Current() const;

  const std::string model_id_;
  ShrinkController& shrink_;
  PrefixCache* const prefix_cache_;
  mutable Mutex mu_;
  bool sealed_ EBB_GUARDED_BY(mu_) = false;
  std::map<std::string, std::string> at_load_ EBB_GUARDED_BY(mu_);
  std::set<std::string> set_since_load_ EBB_GUARDED_BY(mu_);
};

}  // namespace ebb::internal
