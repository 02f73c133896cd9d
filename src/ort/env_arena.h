// EnvArena — the process-wide CPU arena that the arena.* session options configure.
//
// ORT configures an arena (OrtArenaCfg: max_mem, arena_extend_strategy, ...) only for an
// allocator registered on the Env, and registers one such allocator per device per Env. So the
// arena options are process-wide: every model that sets them shares one CPU arena (its sessions
// run with session.use_env_allocators=1). Models that set no arena option keep their own
// per-session arena.
//
// A lease keeps the registration alive; the last lease to go unregisters the allocator, which
// frees the arena's memory. A model asking for a different configuration while leases exist is
// refused with InvalidArgument naming both configurations.
// Thread-safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace ebb::internal {

// Parsed arena options, keyed by OrtArenaCfg's names (max_mem, arena_extend_strategy, ...).
using ArenaConfig = std::map<std::string, uint64_t>;

class EnvArenaLease {
 public:
  ~EnvArenaLease();
  EnvArenaLease(const EnvArenaLease&) = delete;
  EnvArenaLease& operator=(const EnvArenaLease&) = delete;
  const ArenaConfig& config() const { return config_; }

 private:
  friend std::unique_ptr<EnvArenaLease> AcquireEnvArena(const ArenaConfig& config, bool any_config);
  explicit EnvArenaLease(ArenaConfig config) : config_(std::move(config)) {}
  ArenaConfig config_;
};

// Registers (or shares) the env CPU arena with `config`. Throws ebb::Error(InvalidArgument) when
// another configuration is in use, or when ORT refuses the configuration. `any_config`: share
// whatever arena is registered, or register one with `config` (for use_env_allocators=1 alone,
// which asks for the env's arena without configuring it).
std::unique_ptr<EnvArenaLease> AcquireEnvArena(const ArenaConfig& config, bool any_config = false);

// "max_mem=1048576, arena_extend_strategy=1" for messages.
std::string DescribeArenaConfig(const ArenaConfig& config);

}  // namespace ebb::internal
