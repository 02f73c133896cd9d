// Builds Ort::SessionOptions from defaults, genai_config.json and the user's options (in that
// order of precedence). Typed keys use ORT's setters; any other key is passed to ORT as a session
// config entry and logged at info level with where it went.
#pragma once

#include <onnxruntime_cxx_api.h>

#include "ebb/options.h"
#include "model/genai_config.h"
#include "ort/env_arena.h"

namespace ebb::internal {

// Throws ebb::Error(InvalidArgument) naming the key for a value ebb or ORT refuses, and
// Unavailable for an execution provider this ORT build lacks (the message says who named it and
// how to run on CPU). Providers are matched by canonical name (ort/execution_providers.h);
// options.execution_provider, when set, replaces the config's provider list ("cpu": none).
// `has_cpu_arena` receives whether the session will have a CPU arena (enable_cpu_mem_arena).
// `env_arena` receives the arena options (arena.*, arena_extend_strategy) when any is set; the
// session then uses the env's allocator (session.use_env_allocators=1), which the caller must
// register first (AcquireEnvArena).
Ort::SessionOptions BuildSessionOptions(const GenaiConfig& config, const ModelOptions& options,
                                        bool* has_cpu_arena = nullptr,
                                        ArenaConfig* env_arena = nullptr);

// After a session failed to be created with `options`: finds the passthrough session config
// entry (config or user) that ORT refuses, by creating a session for a 70-byte Identity model
// with each entry alone. Returns "" when no single entry is to blame (e.g. a corrupt model).
std::string FindRefusedSessionOption(const GenaiConfig& config, const ModelOptions& options);

}  // namespace ebb::internal
