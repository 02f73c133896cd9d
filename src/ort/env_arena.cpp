#include "ort/env_arena.h"

#include <onnxruntime_cxx_api.h>

#include <mutex>
#include <unordered_map>

#include "core/log.h"
#include "ebb/error.h"
#include "ort/ort_env.h"

namespace ebb::internal {
namespace {

struct Registry {
  std::mutex mu;
  int leases = 0;      // guarded by mu
  ArenaConfig config;  // guarded by mu; valid while leases > 0
  bool registered = false;
};

Registry& R() {
  static Registry r;
  return r;
}

Ort::MemoryInfo CpuArenaInfo() {
  return Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
}

}  // namespace

std::string DescribeArenaConfig(const ArenaConfig& config) {
  std::string s;
  for (const auto& [k, v] : config) {
    // The strategy by the name users write (and ORT documents), not its enum value.
    const std::string value = k != "arena_extend_strategy" ? std::to_string(v)
                              : v == 0                     ? "kNextPowerOfTwo"
                              : v == 1                     ? "kSameAsRequested"
                                                           : std::to_string(v);
    s += (s.empty() ? "" : ", ") + k + "=" + value;
  }
  return s.empty() ? "(defaults)" : s;
}

std::unique_ptr<EnvArenaLease> AcquireEnvArena(const ArenaConfig& config, bool any_config) {
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.leases > 0) {
    if (any_config) {
      ++r.leases;
      return std::unique_ptr<EnvArenaLease>(new EnvArenaLease(r.config));
    }
    if (r.config != config) {
      throw Error(ErrorCode::InvalidArgument,
                  "the CPU arena options are process-wide (ORT registers one env allocator per "
                  "device) and loaded models already use {" +
                      DescribeArenaConfig(r.config) + "}; this model asks for {" +
                      DescribeArenaConfig(config) +
                      "}: load it with the same arena options, or unload the other models first");
    }
    ++r.leases;
    return std::unique_ptr<EnvArenaLease>(new EnvArenaLease(config));
  }
  std::unordered_map<std::string, size_t> cfg(config.begin(), config.end());
  try {
    Ort::ArenaCfg arena_cfg(cfg);
    Ort::MemoryInfo info = CpuArenaInfo();
    OrtEnvironment().CreateAndRegisterAllocator(info, arena_cfg);
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::InvalidArgument, "arena options {" + DescribeArenaConfig(config) +
                                                "} refused by ONNX Runtime: " + e.what());
  }
  r.config = config;
  r.registered = true;
  ++r.leases;
  EBB_LOG_INFO("registered the process-wide CPU arena {{{}}}", DescribeArenaConfig(config));
  return std::unique_ptr<EnvArenaLease>(new EnvArenaLease(config));
}

EnvArenaLease::~EnvArenaLease() {
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (--r.leases > 0 || !r.registered) return;
  try {
    // Unregistering drops ORT's reference; the arena's memory goes when the last session using
    // it is gone (the model releases its session before this lease).
    Ort::MemoryInfo info = CpuArenaInfo();
    OrtEnvironment().UnregisterAllocator(info);
  } catch (const Ort::Exception& e) {
    EBB_LOG_WARN("could not unregister the CPU arena: {}", e.what());
  }
  r.registered = false;
  r.config.clear();
}

}  // namespace ebb::internal
