#include "ort/session_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/version.h"
#include "ort/cpu_threads.h"
#include "ort/execution_providers.h"
#include "ort/ort_env.h"
#include "ort/provider_plan.h"
#include "ort/webgpu_options.h"
#include "platform/file.h"
#include "platform/system_info.h"

namespace ebb::internal {
namespace {

[[noreturn]] void Bad(const std::string& key, const std::string& value, const std::string& want) {
  throw Error(ErrorCode::InvalidArgument,
              "session option " + key + "='" + value + "' is invalid: " + want);
}

int ParseInt(const std::string& key, const std::string& v, int min, int max) {
  int x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < min || x > max) {
    Bad(key, v, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return x;
}

// Thread counts above this only oversubscribe the cores; 100000 threads stall the machine.
int MaxThreads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::min(4u * cores, 4096u));
}

uint64_t PhysicalMemoryBytes() {
  const uint64_t bytes = platform::PhysicalMemoryBytes();
  return bytes == 0 ? UINT64_MAX : bytes;
}

// ORT's smallest arena chunk: its default initial_chunk_size_bytes. A max_mem below it is not
// enforced (ORT still allocates a 1 MiB chunk), so ebb refuses it.
constexpr uint64_t kMinArenaMaxMem = 1 << 20;

// Bounds an arena.* size: ORT stores all but max_mem and max_power_of_two_extend_bytes in an
// int (a larger value wraps, e.g. 16GiB to 0, and ORT then spins), aborts the process on a
// zero initial/growth chunk or dead-bytes limit, and a size beyond physical memory can never
// be honoured.
void CheckArenaSize(const std::string& key, const std::string& value, const std::string& name,
                    uint64_t bytes) {
  const uint64_t phys = PhysicalMemoryBytes();
  const bool int_field = name == "initial_chunk_size_bytes" || name == "max_dead_bytes_per_chunk" ||
                         name == "initial_growth_chunk_size_bytes";
  const uint64_t max = int_field ? std::min<uint64_t>(phys, INT32_MAX) : phys;
  const uint64_t min = name == "max_mem" ? kMinArenaMaxMem : 1;
  if (bytes < min) {
    Bad(key, value,
        name == "max_mem"
            ? "ORT's smallest arena chunk is 1 MiB and it does not enforce a smaller cap; use at "
              "least 1MiB"
            : "must be at least 1 byte (ORT aborts on 0); omit the key for ORT's default");
  }
  if (bytes > max) {
    Bad(key, value,
        "must be at most " + FormatBytes(max) +
            (max == phys ? " (this machine's physical memory)" : " (ORT stores it in an int)"));
  }
}

// The choice `value` names in the option table's row for `key` (its choices and ORT's aliases):
// the validator ModelOptions::Set uses, so genai_config.json's session_options and
// --session-option accept the same spellings (issue 22).
std::string TableChoice(const std::string& key, const std::string& value) {
  return CanonicalEnumValue(*FindOption(key), value);
}

GraphOptimizationLevel ParseOptLevel(const std::string& key, const std::string& value) {
  const std::string v = TableChoice(key, value);
  if (v == "disable") return ORT_DISABLE_ALL;
  if (v == "basic") return ORT_ENABLE_BASIC;
  if (v == "extended") return ORT_ENABLE_EXTENDED;
  return ORT_ENABLE_ALL;
}

// `ep` is a canonical name (CanonicalProviderName); `where` says who asked for it.
void AppendProvider(Ort::SessionOptions& so, const std::string& ep, const std::string& where,
                    const std::map<std::string, std::string>& opts) {
  if (ep == "cpu") return;  // always present; its options are session options
  const auto available = AvailableProviders();
  std::string list;
  for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
  const std::string ort_name = OrtProviderName(ep);
  if (ep == "dml" || (!ort_name.empty() &&
                      std::find(available.begin(), available.end(), ort_name) == available.end())) {
    throw Error(ErrorCode::Unavailable, MissingProviderMessage(ep, where, list));
  }
  // ORT loads a provider's library only once a logger is registered, i.e. with an Ort::Env;
  // without one it fails with "Attempt to use DefaultLogger but none has been registered".
  (void)OrtEnvironment();
  if (ep == "cuda") {
    const OrtApi& api = Ort::GetApi();
    OrtCUDAProviderOptionsV2* cuda = nullptr;
    try {
      Ort::ThrowOnError(api.CreateCUDAProviderOptions(&cuda));
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::Unavailable, MissingProviderMessage(ep, where, list, e.what()));
    }
    std::unique_ptr<OrtCUDAProviderOptionsV2, decltype(api.ReleaseCUDAProviderOptions)> guard(
        cuda, api.ReleaseCUDAProviderOptions);
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : opts) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    try {
      Ort::ThrowOnError(
          api.UpdateCUDAProviderOptions(cuda, keys.data(), values.data(), keys.size()));
    } catch (const Ort::Exception& e) {
      // ORT loads the provider's library here: a build that lists CUDA without shipping it
      // (onnxruntime-node's) fails with "Failed to load library", which no option can fix.
      if (std::string_view(e.what()).find("Failed to load library") != std::string_view::npos) {
        throw Error(ErrorCode::Unavailable, MissingProviderMessage(ep, where, list, e.what()));
      }
      throw Error(ErrorCode::InvalidArgument,
                  std::string("provider_options.cuda refused by ONNX Runtime: ") + e.what());
    }
    try {
      so.AppendExecutionProvider_CUDA_V2(*cuda);
    } catch (const Ort::Exception& e) {  // listed, but its library cannot be loaded
      throw Error(ErrorCode::Unavailable, MissingProviderMessage(ep, where, list, e.what()));
    }
  } else {
    // WebGPU's keys are checked and ebb's own taken out first (ort/webgpu_options.h).
    std::map<std::string, std::string> given = opts;
    if (ep == "webgpu") {
      WebGpuOptions w = ParseWebGpuOptions(opts, where);
      for (const std::string& warning : w.unknown) EBB_LOG_WARN("{}", warning);
      given = std::move(w.ort);
    }
    try {
      so.AppendExecutionProvider(OrtAppendName(ep), std::unordered_map<std::string, std::string>(
                                                        given.begin(), given.end()));
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::Unavailable, MissingProviderMessage(ep, where, list, e.what()));
    }
  }
  for (const auto& [k, v] : opts) {
    EBB_LOG_INFO("provider option {}.{}='{}' -> execution provider options", ep, k, v);
  }
}

// A minimal valid ONNX model (opset 17, y = Identity(x)), to probe session options cheaply.
constexpr unsigned char kIdentityModel[] = {
    8,  8,  18,  3,   101, 98,  98,  58,  55,  10, 16, 10,  1,  120, 18, 1,   121, 34,
    8,  73, 100, 101, 110, 116, 105, 116, 121, 18, 1,  103, 90, 15,  10, 1,   120, 18,
    10, 10, 8,   8,   1,   18,  4,   10,  2,   8,  1,  98,  15, 10,  1,  121, 18,  10,
    10, 8,  8,   1,   18,  4,   10,  2,   8,   1,  66, 4,   10, 0,   16, 17};

// Keys BuildSessionOptions applies with typed setters (not passed through).
bool IsTypedKey(const std::string& key) {
  return key == "intra_op_num_threads" || key == "inter_op_num_threads" ||
         key == "enable_cpu_mem_arena" || key == "enable_mem_pattern" || key == "execution_mode" ||
         key == "graph_optimization_level" || key == "use_env_allocators" ||
         key == "arena_extend_strategy" || key == "profile_file_prefix" ||
         key == "custom_ops_library" || key.starts_with("arena.");
}

constexpr const char* kOrtSessionKeys[] = {
#define EBB_ORT_SESSION_KEY(k) k,
#define EBB_ORT_RUN_KEY(k)
#include "ort/ort_config_keys.inc"
#undef EBB_ORT_SESSION_KEY
#undef EBB_ORT_RUN_KEY
};
constexpr const char* kOrtRunKeys[] = {
#define EBB_ORT_SESSION_KEY(k)
#define EBB_ORT_RUN_KEY(k) k,
#include "ort/ort_config_keys.inc"
#undef EBB_ORT_SESSION_KEY
#undef EBB_ORT_RUN_KEY
};

}  // namespace

// custom_ops_library: ORT dlopen()s the library and calls its RegisterCustomOps, which adds its
// op domains to `so`; the library stays loaded until the session options and every session made
// from them are gone (ORT owns the handle). Checked first so that a wrong path names the file and
// the fix, not dlopen's bare text. A relative path is taken from the working directory here
// (genai_config.json's is resolved against the model folder when the config is read): dlopen
// would search LD_LIBRARY_PATH for a bare name, which would make the same value mean different
// files in different shells.
void RegisterCustomOps(Ort::SessionOptions& so, const std::string& key, const std::string& value) {
  const std::string path = Trim(value);
  if (path.empty() || path == "none") return;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  const std::string want =
      "name an ONNX Runtime custom-op shared library (a .so that exports RegisterCustomOps), or "
      "none";
  const auto st = std::filesystem::status(abs, ec);
  if (ec || !std::filesystem::exists(st)) {
    Bad(key, value,
        "no such file (" + abs.string() +
            "; a relative path is the working directory's, or in genai_config.json the model "
            "folder's, and LD_LIBRARY_PATH is not searched); " +
            want);
  }
  if (std::filesystem::is_directory(st)) {
    Bad(key, value, abs.string() + " is a folder, not a library file; " + want);
  }
  if (!std::filesystem::is_regular_file(st)) {
    Bad(key, value, abs.string() + " is not a regular file (a device, pipe or socket); " + want);
  }
  try {
    so.RegisterCustomOpsLibrary(abs.c_str());
  } catch (const Ort::Exception& e) {
    Bad(key, value,
        std::string("ONNX Runtime could not register it (") + e.what() +
            "); it must be a shared library for this machine that exports RegisterCustomOps, "
            "built for ONNX Runtime " +
            OrtVersion() + " or older");
  }
  EBB_LOG_INFO("session option {}='{}' -> custom ops registered from {}", key, value, abs.string());
}

std::string UnregisteredOpHint(const std::string& ort_message, const std::string& library) {
  if (ort_message.find("is not a registered function/op") == std::string::npos) return "";
  if (!library.empty() && library != "none") {
    return "the graph uses an op that neither ONNX Runtime " + OrtVersion() +
           " nor the custom-op library " + library +
           " provides; check that the library registers the op's domain, name and opset";
  }
  return "the graph uses an op this ONNX Runtime " + OrtVersion() +
         " does not have; if it comes from a custom-op library, name the library with "
         "session_options.custom_ops_library (genai_config.json or --session-option "
         "custom_ops_library=PATH)";
}

bool IsKnownOrtSessionKey(const std::string& key) {
  for (const char* k : kOrtSessionKeys) {
    if (key == k) return true;
  }
  return false;
}

bool IsKnownOrtRunKey(const std::string& key) {
  for (const char* k : kOrtRunKeys) {
    if (key == k) return true;
  }
  return false;
}

std::string ClosestRunKey(const std::string& key) {
  std::vector<std::string_view> candidates(std::begin(kOrtRunKeys), std::end(kOrtRunKeys));
  candidates.push_back("memory.shrink_every");
  candidates.push_back("memory.shrink_above");
  return DidYouMean(key, candidates);
}

std::string ClosestSessionKey(const std::string& key) {
  std::vector<std::string_view> candidates(std::begin(kOrtSessionKeys), std::end(kOrtSessionKeys));
  for (const auto& spec : OptionTable()) {
    if (HasScope(spec, OptionScope::kSession)) candidates.push_back(spec.key);
  }
  // Also match on the last dotted part: "max_mem" -> "arena.max_mem",
  // "disable_prepacking" -> "session.disable_prepacking".
  std::string hint = DidYouMean(key, candidates);
  if (hint.empty()) {
    for (const auto& c : candidates) {
      const auto dot = c.rfind('.');
      if (dot != std::string_view::npos && c.substr(dot + 1) == key) {
        return " (did you mean '" + std::string(c) + "'?)";
      }
    }
  }
  return hint;
}

EffectiveSessionOptions::EffectiveSessionOptions(const KeyValues& config_session,
                                                 const ModelOptions& options) {
  for (const auto& [k, v] : config_session) entries_[k] = v;
  for (const auto& [k, v] : options.session_options) entries_[k] = v;
}

const std::string* EffectiveSessionOptions::Find(std::string_view key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

bool EffectiveSessionOptions::IsOn(std::string_view key) const {
  const std::string* v = Find(key);
  return v != nullptr && *v == "1";
}

std::string FindRefusedSessionOption(const EffectiveSessionOptions& session) {
  for (const auto& [key, value] : session.entries()) {
    if (IsTypedKey(key)) continue;
    try {
      Ort::SessionOptions so;
      so.SetIntraOpNumThreads(1);
      so.AddConfigEntry(key.c_str(), value.c_str());
      Ort::Session probe(OrtEnvironment(), kIdentityModel, sizeof(kIdentityModel), so);
    } catch (const Ort::Exception& e) {
      return "session option " + key + "='" + value + "' refused by ONNX Runtime: " + e.what();
    }
  }
  return "";
}

Ort::SessionOptions BuildSessionOptions(const EffectiveSessionOptions& session,
                                        const std::vector<ProviderOptions>& config_providers,
                                        const ModelOptions& options, bool* has_cpu_arena,
                                        ArenaConfig* env_arena, bool* use_env_allocators) {
  ArenaConfig arena_cfg;
  bool arena = true;
  bool env_alloc = false;
  if (has_cpu_arena == nullptr) has_cpu_arena = &arena;
  if (use_env_allocators == nullptr) use_env_allocators = &env_alloc;
  *has_cpu_arena = true;
  *use_env_allocators = false;
  const auto& merged = session.entries();

  Ort::SessionOptions so;
  so.SetGraphOptimizationLevel(ORT_ENABLE_ALL);
  // ebb's default: no memory patterns. ORT caches one allocation plan per distinct input shape;
  // every new prompt length adds one, so RSS creeps up by ~9 KiB per request under mixed prompt
  // lengths (measured: tests/integration Soak.*), and decode gains nothing from it.
  // enable_mem_pattern=1 restores ORT's default.
  so.DisableMemPattern();
  // ebb's default thread count: the physical cores this process may use (cpu_threads.h says why
  // ORT's own default is not used); intra_op_num_threads=0 asks for ORT's.
  if (session.Find("intra_op_num_threads") == nullptr) {
    so.SetIntraOpNumThreads(DefaultIntraOpThreads());
  }
  for (const auto& [key, value] : merged) {
    try {
      if (key == "intra_op_num_threads") {
        so.SetIntraOpNumThreads(ParseInt(key, value, 0, MaxThreads()));
      } else if (key == "inter_op_num_threads") {
        so.SetInterOpNumThreads(ParseInt(key, value, 0, MaxThreads()));
      } else if (key == "enable_cpu_mem_arena") {
        *has_cpu_arena = ParseBool(key, value);
        *has_cpu_arena ? so.EnableCpuMemArena() : so.DisableCpuMemArena();
      } else if (key == "enable_mem_pattern") {
        ParseBool(key, value) ? so.EnableMemPattern() : so.DisableMemPattern();
      } else if (key == "execution_mode") {
        so.SetExecutionMode(TableChoice(key, value) == "parallel" ? ORT_PARALLEL : ORT_SEQUENTIAL);
      } else if (key == "graph_optimization_level") {
        so.SetGraphOptimizationLevel(ParseOptLevel(key, value));
      } else if (key == "profile_file_prefix") {
        // ORT's profiler: one JSON trace (chrome://tracing) per session, written when the
        // session ends (the model unloads), named PREFIX_<date>_<time>.json.
        // Checked now: ORT would only fail (and only log) when it writes, at unload.
        const std::string prefix = Trim(value);
        if (prefix.empty()) {
          Bad(key, value, "expected a file prefix such as /tmp/ebb-profile, or off");
        }
        if (prefix != "off") {
          const std::filesystem::path dir = std::filesystem::path(prefix).parent_path().empty()
                                                ? std::filesystem::path(".")
                                                : std::filesystem::path(prefix).parent_path();
          if (!std::filesystem::is_directory(dir) || !platform::CanWrite(dir)) {
            Bad(key, value,
                "the folder '" + dir.string() +
                    "' does not exist or is not writable; name a "
                    "prefix in a writable folder, such as /tmp/ebb-profile");
          }
          so.EnableProfiling(prefix.c_str());
        }
      } else if (key == "custom_ops_library") {
        RegisterCustomOps(so, key, value);
      } else if (key == "use_env_allocators" || key == "session.use_env_allocators") {
        *use_env_allocators = ParseBool(key, value);
        so.AddConfigEntry("session.use_env_allocators", *use_env_allocators ? "1" : "0");
      } else if (key == "arena_extend_strategy") {
        // OrtArenaCfg's numbers: 0 = kNextPowerOfTwo, 1 = kSameAsRequested.
        arena_cfg["arena_extend_strategy"] = TableChoice(key, value) == "kSameAsRequested" ? 1 : 0;
      } else if (key.starts_with("arena.")) {
        const std::string name = key.substr(6);
        static const char* const kArenaKeys[] = {
            "max_mem", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
            "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes"};
        bool known = false;
        for (const char* k : kArenaKeys) known |= name == k;
        if (!known) {
          std::vector<std::string_view> names;
          for (const char* k : kArenaKeys) names.emplace_back(k);
          Bad(key, value,
              "OrtArenaCfg has no such field" + DidYouMean(name, names) +
                  "; arena keys: arena.max_mem, arena.initial_chunk_size_bytes, "
                  "arena.max_dead_bytes_per_chunk, arena.initial_growth_chunk_size_bytes, "
                  "arena.max_power_of_two_extend_bytes, arena_extend_strategy");
        }
        arena_cfg[name] = ParseByteSize(value, key);
        CheckArenaSize(key, value, name, arena_cfg[name]);
      } else {
        // Open passthrough, as users asked; but a key the pinned ORT does not document is most
        // likely a typo that ORT would ignore without a word.
        if (!IsKnownOrtSessionKey(key)) {
          EBB_LOG_WARN(
              "session option '{}' is not a key ebb types nor one ONNX Runtime {} documents{}; "
              "passing it to ORT as a session config entry anyway (ORT ignores keys it does not "
              "know)",
              key, OrtVersion(), ClosestSessionKey(key));
        }
        so.AddConfigEntry(key.c_str(), value.c_str());
        EBB_LOG_INFO("session option {}='{}' -> ORT session config entry", key, value);
      }
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::InvalidArgument, "session option " + key + "='" + value +
                                                  "' refused by ONNX Runtime: " + e.what());
    }
  }
  if (!*has_cpu_arena && arena_cfg.count("arena_extend_strategy")) {
    // The seed user's own call: enable_cpu_mem_arena=0 with a strategy. With no arena there is
    // nothing to extend, so the strategy is moot, not a conflict: load, and say so.
    EBB_LOG_WARN(
        "session option arena_extend_strategy={} has no effect with enable_cpu_mem_arena=0 (there "
        "is no CPU arena to extend); ignored",
        arena_cfg["arena_extend_strategy"] == 0 ? "kNextPowerOfTwo" : "kSameAsRequested");
    arena_cfg.erase("arena_extend_strategy");
  }
  if (!arena_cfg.empty()) {
    if (!*has_cpu_arena) {
      throw Error(ErrorCode::InvalidArgument,
                  "arena options (" + DescribeArenaConfig(arena_cfg) +
                      ") conflict with enable_cpu_mem_arena=0: an arena cap or size needs the "
                      "arena; drop them, or drop enable_cpu_mem_arena=0");
    }
    so.AddConfigEntry("session.use_env_allocators", "1");
    *use_env_allocators = true;
    if (env_arena != nullptr) *env_arena = arena_cfg;
  }
  // Providers as ResolveProviders orders them (the plan the model cache and the shrink
  // controller read too).
  const ProviderPlan plan = ResolveProviders(config_providers, options);
  for (const auto& other : plan.dropped) {
    EBB_LOG_INFO("execution_provider={}: not using {} (named by {})", plan.order.front(), other,
                 plan.named_by.at(other));
  }
  for (const auto& ep : plan.order)
    AppendProvider(so, ep, plan.named_by.at(ep), plan.options.at(ep));
  return so;
}

void AppendExecutionProviders(Ort::SessionOptions& so,
                              const std::vector<ProviderOptions>& config_providers,
                              const ModelOptions& options) {
  const ProviderPlan plan = ResolveProviders(config_providers, options);
  for (const auto& ep : plan.order)
    AppendProvider(so, ep, plan.named_by.at(ep), plan.options.at(ep));
}

void CheckExecutionProviders(const std::vector<ProviderOptions>& config_providers,
                             const ModelOptions& options) {
  const ProviderPlan plan = ResolveProviders(config_providers, options);
  for (const auto& ep : plan.order) {
    Ort::SessionOptions scratch;  // appended to and dropped: nothing is loaded or run
    AppendProvider(scratch, ep, plan.named_by.at(ep), plan.options.at(ep));
  }
}

}  // namespace ebb::internal
