// Builds Ort::SessionOptions from defaults, genai_config.json and the user's options (in that
// order of precedence). Typed keys use ORT's setters; any other key is passed to ORT as a session
// config entry and logged at info level with where it went (with a warning naming the closest
// known key when the pinned ORT's headers do not list it).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ebb/options.h"
#include "ort/env_arena.h"
#include "ort/provider_options.h"

namespace ebb::internal {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// The session options a model runs with: genai_config.json's session_options, then the user's
// (ModelOptions::session_options); a key in both takes the user's value. The one statement of
// that rule: BuildModel computes it once per load, and the session (BuildSessionOptions), the
// compiled-model cache key (ModelCache::Plan), the refused-option probe and the load's hints read
// this value.
class EffectiveSessionOptions {
 public:
  // No default constructor: an empty value would silently drop the user's options.
  EffectiveSessionOptions(const KeyValues& config_session, const ModelOptions& options);
  // Every key with its value, sorted by key.
  const std::map<std::string, std::string, std::less<>>& entries() const { return entries_; }
  // The value of `key`; nullptr when neither the config nor the user sets it.
  const std::string* Find(std::string_view key) const;
  // Whether `key` is set to "1".
  bool IsOn(std::string_view key) const;

 private:
  std::map<std::string, std::string, std::less<>> entries_;
};

// `session`: the effective session options; `config_providers`: the model config's providers
// (lower precedence than `options`' execution_provider and provider_options). Throws
// ebb::Error(InvalidArgument) naming the key for a value ebb or ORT refuses, and Unavailable for an
// execution provider this ORT build lacks (the message says who named it and how to run on CPU).
// Providers are matched by canonical name (ort/execution_providers.h); options.execution_provider,
// when set, replaces the config's provider list ("cpu": none). `has_cpu_arena` receives whether the
// session will have a CPU arena (enable_cpu_mem_arena). `env_arena` receives the arena options
// (arena.*, arena_extend_strategy) when any is set, and `use_env_allocators` whether the session
// allocates from the env's arena (any arena option, or use_env_allocators=1); the caller must then
// register it first (AcquireEnvArena).
Ort::SessionOptions BuildSessionOptions(const EffectiveSessionOptions& session,
                                        const std::vector<ProviderOptions>& config_providers,
                                        const ModelOptions& options, bool* has_cpu_arena = nullptr,
                                        ArenaConfig* env_arena = nullptr,
                                        bool* use_env_allocators = nullptr);

// Registers the custom-op library `value` names (session option `key`, "custom_ops_library") in
// `so`: "" or "none" registers nothing; a relative path is the working directory's. Throws
// ebb::Error(InvalidArgument) naming the path for a missing file or one ORT cannot register.
// BuildSessionOptions calls it for the key; so does anything else that opens a model's graph
// (DescribeModel), since a graph with custom ops does not load without them.
void RegisterCustomOps(Ort::SessionOptions& so, const std::string& key, const std::string& value);

// For ORT's "X is not a registered function/op" (a graph with an op this ORT lacks): the reason
// and the fix, given the custom_ops_library the session had ("" = none); "" for any other
// message.
std::string UnregisteredOpHint(const std::string& ort_message, const std::string& library);

// Checks, without creating a session, that every execution provider a session with these
// options would get (the config's list, or options.execution_provider / provider_options, as
// BuildSessionOptions resolves them) is in this ONNX Runtime build and takes its options: each
// is appended to a scratch Ort::SessionOptions, which loads a provider's library as a load
// would. Throws what BuildSessionOptions throws for them (Unavailable naming who asked for the
// provider and how to run on CPU; InvalidArgument for options the provider refuses).
void CheckExecutionProviders(const std::vector<ProviderOptions>& config_providers,
                             const ModelOptions& options);

// Appends the execution providers a session with these options gets (as BuildSessionOptions
// resolves and checks them) to `so`; for a session that opens a graph without ebb's other
// options (DescribeModel). Throws what BuildSessionOptions throws for providers.
void AppendExecutionProviders(Ort::SessionOptions& so,
                              const std::vector<ProviderOptions>& config_providers,
                              const ModelOptions& options);

// After a session failed to be created with `options`: finds the passthrough session config
// entry (config or user) that ORT refuses, by creating a session for a 70-byte Identity model
// with each entry alone. Returns "" when no single entry is to blame (e.g. a corrupt model).
std::string FindRefusedSessionOption(const EffectiveSessionOptions& session);

// Whether the pinned ORT's headers document `key` as a session (or run) config entry.
bool IsKnownOrtSessionKey(const std::string& key);
bool IsKnownOrtRunKey(const std::string& key);
// " (did you mean 'x'?)" among ORT's documented session keys and ebb's typed session keys.
std::string ClosestSessionKey(const std::string& key);
// Like ClosestSessionKey, over ORT's documented run keys and ebb's shrink-policy keys.
std::string ClosestRunKey(const std::string& key);

}  // namespace ebb::internal
