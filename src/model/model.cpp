#include "ebb/model.h"

#include <fmt/format.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/files.h"
#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "cpu_ops/pack_file.h"
#include "cpu_ops/pack_ledger.h"
#include "ebb/error.h"
#include "ebb/process_memory.h"
#include "ebb/version.h"
#include "memory/anon_peak.h"
#include "memory/file_pages.h"
#include "memory/heap_trim.h"
#include "memory/mapped_file_guard.h"
#include "memory/memory_governor.h"
#include "model/cache_builder.h"
#include "model/cpu_ops_rewrite.h"
#include "model/ep_placement.h"
#include "model/graph_ops.h"
#include "model/last_logits.h"
#include "model/model_cache.h"
#include "model/model_device.h"
#include "model/model_impl.h"
#include "model/model_info.h"
#include "model/model_kernels.h"
#include "model/probe_run.h"
#include "model/run_error.h"
#include "ort/arena_stats.h"
#include "ort/cpu_kernels.h"
#include "ort/execution_providers.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
#include "ort/provider_plan.h"
#include "ort/session_options.h"

namespace ebb {
namespace internal {
namespace {

// The custom_ops_library the session registers; empty when none is named.
std::string CustomOpsLibrary(const EffectiveSessionOptions& session) {
  const std::string* library = session.Find("custom_ops_library");
  return library == nullptr || *library == "none" ? std::string() : *library;
}

// Maps ORT's session-creation failure to what is wrong: a refused option, threads that could
// not start, a missing external-data file, or (only when ORT says so) a file that is not ONNX.
Error SessionCreateError(const GenaiConfig& cfg, const EffectiveSessionOptions& session,
                         const std::string& ort_message) {
  const std::string where = EscapeForMessage(cfg.model_path.string(), 1024) + ": ";
  const std::string msg = EscapeForMessage(ort_message, 600);
  if (IsOutOfResources(ort_message)) {
    if (ort_message.find("pthread_create") != std::string::npos ||
        ort_message.find("Resource temporarily unavailable") != std::string::npos) {
      return Error(ErrorCode::ResourceExhausted,
                   where + "ONNX Runtime could not start its threads (" + msg +
                       "); raise the process's limits (ulimit -u, ulimit -v) or lower "
                       "intra_op_num_threads");
    }
    if (ort_message.find("Too many open files") != std::string::npos) {
      return Error(ErrorCode::ResourceExhausted,
                   where +
                       "the process ran out of file descriptors while ONNX Runtime loaded "
                       "the model (" +
                       msg + "); raise its limit (ulimit -n) or close files");
    }
    return Error(ErrorCode::ResourceExhausted,
                 where + "out of memory while ONNX Runtime loaded the model (" + msg +
                     "); free memory or raise the process's limit (ulimit -v)");
  }
  if (ort_message.find("xternal data") != std::string::npos ||
      ort_message.find("external_data") != std::string::npos ||
      ort_message.find("Failed to open file") != std::string::npos ||
      ort_message.find("GetFileLength") != std::string::npos) {
    return Error(ErrorCode::NotFound, where +
                                          "a weight file the model refers to (external data) is "
                                          "missing or unreadable: " +
                                          msg + "; put it next to the model file");
  }
  // ORT's message often does not name the option it refused; find it.
  const std::string refused = FindRefusedSessionOption(session);
  if (!refused.empty()) {
    return Error(ErrorCode::InvalidArgument, where + refused + "; fix or remove that option");
  }
  if (ort_message.find("Protobuf parsing failed") != std::string::npos ||
      ort_message.find("INVALID_PROTOBUF") != std::string::npos) {
    return Error(ErrorCode::InvalidArgument,
                 where + "not a valid ONNX file (" + msg + "); it may be corrupt or truncated");
  }
  // An op ORT does not have: a custom op whose library was not registered, or lacks it.
  if (const std::string hint = UnregisteredOpHint(ort_message, CustomOpsLibrary(session));
      !hint.empty()) {
    return Error(ErrorCode::InvalidArgument, where + hint + " (" + msg + ")");
  }
  return Error(ErrorCode::InvalidArgument,
               where + "ONNX Runtime could not create a session: " + msg);
}

uint64_t FileBytes(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

// The model file and its external data files (any other regular file in the folder whose name
// starts with the model file's name, e.g. model.onnx.data), in bytes.
uint64_t WeightsBytes(const std::filesystem::path& model_path) {
  uint64_t total = FileBytes(model_path);
  std::error_code ec;
  const std::string stem = model_path.filename().string();
  for (const auto& e : std::filesystem::directory_iterator(model_path.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name != stem && name.starts_with(stem) && e.is_regular_file(ec)) total += FileBytes(e);
  }
  return total;
}

// The operators of the graph (node counts), or nullopt (logged) when ebb cannot list them. Read
// before ORT loads the file; callers fall back to safe defaults.
std::optional<std::map<OpId, int>> TryGraphOps(const std::filesystem::path& model_path) {
  try {
    return GraphOps(model_path);
  } catch (const Error& e) {
    EBB_LOG_WARN("cannot list the operators of {} ({})", model_path.string(), e.what());
    return std::nullopt;
  }
}

// A session of the model folder's graph as ebb runs it: rewritten for last-position logits
// (last_logits.h) when asked and possible, then with nodes moved to ebb's kernels (cpu_ops,
// cpu_ops_rewrite.h) when `cpu_ops` has a kind, else as it is. `cpu_ops_moved` (may be null)
// receives what the loaded graph runs on ebb's kernels. ebb's rewrites must never be why a model
// does not load: a rewritten graph ORT refuses is logged and the next simpler one is loaded.
// Throws the Ort::Exception of the plain load when the model itself does not load.
// `for_cache`: the session writes a model-cache entry, whose key says that the rewrites are in
// it. A rewrite the system stopped (the file not read, the memory file not written, ORT out of
// memory, threads or descriptors) then throws (std::runtime_error, Ort::Exception) instead of
// falling back, so that no entry holds a simpler graph than its key says.
std::unique_ptr<Ort::Session> CreateSourceSession(const GenaiConfig& cfg, bool last_logits,
                                                  CpuOpsKinds cpu_ops, Ort::SessionOptions so,
                                                  CpuOpsPlan* cpu_ops_moved,
                                                  bool for_cache = false) {
  if (cpu_ops_moved) *cpu_ops_moved = {};
  // A rewritten graph lives in a memory file; its external data is still read from the folder.
  auto from_memory = [&](const RewrittenModel& m) {
    Ort::SessionOptions o = so.Clone();
    o.AddConfigEntry("session.model_external_initializers_file_folder_path",
                     cfg.model_path.parent_path().c_str());
    return std::make_unique<Ort::Session>(OrtEnvironment(), m.path().c_str(), o);
  };
  std::optional<RewrittenModel> logits_model;
  if (!cfg.is_encoder && last_logits) {
    std::string why_not;
    bool system_failure = false;
    logits_model = RewriteForLastLogits(cfg.model_path, cfg.io.logits, cfg.hidden_size, &why_not,
                                        &system_failure);
    if (!logits_model && for_cache && system_failure) {
      throw std::runtime_error("prefill_logits=last could not rewrite the graph (" + why_not + ")");
    }
    if (!logits_model) {
      EBB_LOG_INFO("prefill_logits=last: {} keeps every position's logits ({})",
                   cfg.model_path.string(), why_not);
    }
  }
  if (cpu_ops.any()) {
    std::string why_not;
    CpuOpsPlan plan;
    bool system_failure = false;
    std::optional<RewrittenModel> moved =
        RewriteForCpuOps(logits_model ? logits_model->path() : cfg.model_path, cpu_ops,
                         cfg.head_size, &plan, &why_not, &system_failure);
    if (!moved && for_cache && system_failure) {
      throw std::runtime_error("cpu_ops could not rewrite the graph (" + why_not + ")");
    }
    if (!moved) {
      EBB_LOG_INFO("cpu_ops: {} runs on ORT's kernels ({})", cfg.model_path.string(), why_not);
    } else {
      try {
        auto session = from_memory(*moved);
        if (cpu_ops_moved) *cpu_ops_moved = plan;
        return session;
      } catch (const Ort::Exception& e) {
        if (for_cache && IsOutOfResources(e.what())) throw;
        EBB_LOG_WARN(
            "cpu_ops: the graph of {} with ebb's kernels did not load ({}); loading it with "
            "ORT's",
            cfg.model_path.string(), internal::OneLine(e.what()));
      }
    }
  }
  if (logits_model) {
    try {
      return from_memory(*logits_model);
    } catch (const Ort::Exception& e) {
      if (for_cache && IsOutOfResources(e.what())) throw;
      EBB_LOG_WARN(
          "prefill_logits=last: the rewritten graph of {} did not load ({}); loading it "
          "as it is",
          cfg.model_path.string(), internal::OneLine(e.what()));
    }
  }
  return std::make_unique<Ort::Session>(OrtEnvironment(), cfg.model_path.c_str(), so);
}

}  // namespace

ModelImpl::~ModelImpl() {
  Release();
  // The model's handle to its runtime's budget goes last (Release has returned its KV).
  if (registered && host) host->governor().AddModel(-1);
}

uint64_t EstimateWeightsBytes(const std::filesystem::path& dir) {
  return WeightsBytes(LoadModelFolderConfig(dir).model_path);
}

// What the cache build needs from this load (model_cache.h). The probes read the model's graph
// IO and KV layout when they run, after the load has resolved them.
ModelCache::BuildJob MakeCacheBuildJob(ModelImpl& mi, const Ort::SessionOptions& so) {
  ModelCache::BuildJob job;
  job.session_options = so.Clone();
  job.create_source = [cfg = mi.config, last = mi.options.last_position_logits,
                       cpu_ops = mi.cpu_ops](Ort::SessionOptions o) {
    return CreateSourceSession(cfg, last, cpu_ops, std::move(o), nullptr, /*for_cache=*/true);
  };
  job.probe = [&mi](Ort::Session& s) {
    return ProbeOutputs(s, mi.config, mi.io, mi.encoder, mi.info.past_present_share_buffer);
  };
  job.reference = [&mi] {
    return ProbeOutputs(*mi.session, mi.config, mi.io, mi.encoder,
                        mi.info.past_present_share_buffer);
  };
  // A 32nd of the weights per chunk: few sessions, and little held beside the live session.
  const uint64_t weights = WeightsBytes(mi.config.model_path);
  job.chunk_bytes = std::clamp<uint64_t>(weights / 32, 16ull << 20, 128ull << 20);
  return job;
}

// Finishes the model's cache entry in the background (cache_builder.h). What the build holds
// beside the live session (ModelCache::build_transient_bytes) is charged to memory.limit for its
// duration, and no build starts when the budget has no room for it.
bool StartCacheBuild(ModelImpl& mi, ModelCache cache, ModelCache::BuildJob job) {
  MemoryGovernor& gov = mi.host->governor();
  const uint64_t transient = cache.build_transient_bytes();
  try {
    gov.Admit(transient);
  } catch (const Error& e) {
    EBB_LOG_INFO("model cache: not building an entry for {} now: {}", mi.config.dir.string(),
                 e.what());
    return false;  // ~ModelCache removes the optimised graph and releases the lock
  }
  mi.cache_builder = std::make_unique<CacheBuilder>(
      std::move(cache), std::move(job), mi.config.dir.string(),
      [&mi, &gov, transient](bool committed, uint64_t peak_anon_bytes) {
        gov.Release(transient);
        mi.cache_build_peak_anon_bytes = peak_anon_bytes;
        mi.cache_build_result = committed ? 1 : 0;
      });
  return true;
}

namespace {

// The load's steps, in BuildModel's order. Each fills its part of the model being built; a throw
// fails the load, and ~ModelImpl frees what the earlier steps built.

// Options checked before anything heavy: a chat template given at load must parse, and a
// pressure source (used once the weights are known to be file-backed) must exist.
PressureSource CheckLoadOptions(ModelImpl& mi, const ModelOptions& options) {
  if (!options.chat_template.empty()) {
    mi.chat_template_owned = LoadChatTemplateOption(mi.config.dir, options.chat_template);
  }
  PressureSource pressure;
  if (options.release_weights_on_pressure) {
    pressure = ResolvePressureSource(options.pressure_cgroup);
    std::error_code ec;
    if (!pressure.cgroup.empty() && !std::filesystem::is_directory(pressure.cgroup, ec)) {
      throw Error(ErrorCode::InvalidArgument,
                  "memory.pressure_cgroup=" + options.pressure_cgroup +
                      ": not a folder; give a cgroup folder (e.g. under /sys/fs/cgroup), auto or "
                      "machine");
    }
  }
  return pressure;
}

// Step 1a, the session options: the device (before ORT sees the providers: WebGPU's device
// options are checked against the models already on it, and what a device cannot do is refused
// now), the options themselves, and the env arena when the session allocates from it.
Ort::SessionOptions PrepareSessionOptions(ModelImpl& mi, const EffectiveSessionOptions& session) {
  const GenaiConfig& cfg = mi.config;
  const ModelOptions& options = mi.options;
  PrepareDevice(mi, ResolveProviders(cfg.provider_options, options), options);
  // The caller's default rows (ebb serve: --parallel) where batching is off and the KV is in
  // host memory; mi.options is what the batcher and the stats read.
  if (options.decode_batch_max_rows <= 1 && options.decode_batch_default_rows > 1 && !mi.device &&
      !cfg.is_encoder) {
    mi.options.decode_batch_max_rows = std::min(options.decode_batch_default_rows, 64);
  }
  ArenaConfig arena_cfg;
  bool use_env_allocators = false;
  Ort::SessionOptions so = BuildSessionOptions(session, cfg.provider_options, options,
                                               &mi.has_cpu_arena, &arena_cfg, &use_env_allocators);
  if (!arena_cfg.empty() || use_env_allocators) {
    // use_env_allocators alone shares the env arena that is registered (or registers one with
    // ORT's defaults): the session then allocates from it, as the user asked.
    mi.env_arena = AcquireEnvArena(arena_cfg, /*any_config=*/arena_cfg.empty());
    if (auto it = mi.env_arena->config().find("max_mem"); it != mi.env_arena->config().end()) {
      mi.arena_max_mem = it->second;
    }
  }
  // On an accelerator, ORT records which provider got each node, for the kernels line.
  if (mi.device) so.AddConfigEntry("session.record_ep_graph_assignment_info", "1");
  return so;
}

// Step 1a', ebb's kernels (option cpu_ops, cpu_ops_rewrite.h): the kinds this load moves, and the
// built-in ebb.cpu domain registered on `so` wherever the CPU runs a kind (every session of the
// load, the model cache's included, clones `so`). DecideCpuOps says when nothing moves (a device,
// an encoder, a folder naming libebb_cpu_ops.so, a graph with no eligible node); its notes are
// logged. Returns whether the graph could not be read (CpuOpsPlan::unread).
bool PlanCpuOpsForLoad(ModelImpl& mi, const EffectiveSessionOptions& session,
                       Ort::SessionOptions& so) {
  const CpuOpsDecision d =
      DecideCpuOps(mi.config, mi.options.cpu_ops, mi.device.has_value(), CustomOpsLibrary(session));
  for (const auto& note : d.notes)
    EBB_LOG_INFO("cpu_ops={}: '{}': {}", mi.options.cpu_ops, mi.id, note);
  if (d.register_kernels) {
    RegisterBuiltinCpuOps(so);
    mi.cpu_ops_registered = true;
    mi.cpu_ops = d.kinds;
  }
  return d.plan.unread;
}

// Step 1b, the session: from the model cache's entry (the graph already optimised, the weights
// mapped from it) or from the model file; when the load builds the entry, the optimised graph is
// written first (model_cache.h). A cache problem never fails a load. `placement` receives which
// nodes an accelerator runs (ep_placement.h).
void CreateSession(ModelImpl& mi, const EffectiveSessionOptions& session,
                   const Ort::SessionOptions& so, ModelCache& cache, ModelCache::BuildJob& job,
                   std::string* placement) {
  const GenaiConfig& cfg = mi.config;
  // ebb's int4 matmul counts the weights it repacks into anonymous memory (no pack file to map)
  // into this load's ledger (cpu_ops/pack_ledger.h); ResolveGraphIo adds them to weights_bytes,
  // which ChargeWeights charges to memory.limit.
  ebb_cpu_ops::PackLedger ledger;
  Ort::SessionOptions counted = so.Clone();
  if (mi.cpu_ops_registered) {
    counted.AddConfigEntry(ebb_cpu_ops::kPackLedgerKey, ledger.id().c_str());
  }
  auto load_entry = [&] {
    cache.Prefetch();
    Ort::SessionOptions cached_so = counted.Clone();
    cached_so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
    // ebb's int4 matmul kernel (cpu_ops, or libebb_cpu_ops.so named by the folder) maps the
    // repacked weights the build wrote into the entry (read only: an entry is never modified; a
    // missing file repacks into anonymous memory). Other kernels ignore the entry.
    cached_so.AddConfigEntry(ebb_cpu_ops::kPackDirKey, cache.entry().c_str());
    try {
      mi.session =
          std::make_unique<Ort::Session>(OrtEnvironment(), cache.cached_model().c_str(), cached_so);
      cache.MarkUsed();
      mi.weights_entry = cache.entry();
      if (mi.cpu_ops_registered) {  // what the entry's graph runs on ebb's kernels
        if (const auto ops = TryGraphOps(cache.cached_model())) {
          auto count = [&](const char* op) {
            auto it = ops->find({kCpuOpsDomain, op});
            return it == ops->end() ? 0 : it->second;
          };
          mi.cpu_ops_moved.attention = count("GroupQueryAttention");
          mi.cpu_ops_moved.matmul = count("MatMulNBits");
        }
      }
      EBB_LOG_INFO("model cache: loaded {} from {} (graph already optimised, weights mapped)",
                   cfg.model_path.string(), cache.entry().string());
    } catch (const Ort::Exception& e) {
      // Out of memory (or threads, or descriptors) says nothing against the entry: it is kept
      // for the next load, and rebuilding it now would need more of what ran out.
      if (IsOutOfResources(e.what())) {
        cache.SkipAfterFailedLoad(e.what());
      } else {
        cache.RebuildAfterFailedLoad(e.what());
      }
    }
  };
  if (cache.action() == ModelCache::Action::kLoad) load_entry();
  if (!mi.session && cache.action() == ModelCache::Action::kBuild) {
    cache.WriteOptimizedGraph(job);
    if (cache.action() == ModelCache::Action::kLoad) load_entry();  // built meanwhile
  }
  if (!mi.session) {
    try {
      mi.session = CreateSourceSession(cfg, mi.options.last_position_logits, mi.cpu_ops,
                                       counted.Clone(), &mi.cpu_ops_moved);
    } catch (const Ort::Exception& e) {
      throw SessionCreateError(cfg, session, e.what());
    }
  }
  mi.repacked_anon_bytes = ledger.anon_bytes();
  if (!mi.weights_entry.empty() && mi.repacked_anon_bytes > 0) {
    // The entry's build wrote each kernel's pack file (cpu_ops/pack_file.h; a build that could
    // not is not committed), so a kernel repacks only when it could not open or map its file now
    // (OpenPack: out of descriptors, address space or mappings), or when the file is missing or
    // does not match (an ebb from before pack files built the entry, or a folder naming
    // libebb_cpu_ops.so, whose build is not checked). Said, because the weights then hold
    // anonymous memory that a load from the entry does not otherwise take.
    EBB_LOG_WARN(
        "model cache: {} of ebb's int4 matmul packs were not mapped from {} and were repacked "
        "into anonymous memory (counted in the weights): a pack file could not be opened or "
        "mapped now (raise `ulimit -n`, `ulimit -v` or vm.max_map_count), or it is missing or "
        "does not match (if this repeats on every load, remove the entry: the next load "
        "rebuilds it)",
        FormatBytes(mi.repacked_anon_bytes), mi.weights_entry.string());
  }
  if (mi.device) {
    *placement = DescribeEpPlacement(ReadEpPlacement(*mi.session), mi.device->provider,
                                     OrtProviderName(mi.device->provider));
  }
}

// Step 2, the graph's inputs and outputs, the weights' size and the tokenizer.
void ResolveGraphIo(ModelImpl& mi) {
  const GenaiConfig& cfg = mi.config;
  if (cfg.is_encoder) {
    mi.encoder = ResolveEncoderIo(cfg, *mi.session);
  } else {
    mi.io = ResolveIo(cfg, *mi.session);
  }
  // The weight files, plus ebb's repacked copy of the int4 weights where it is anonymous memory
  // (no model-cache entry to map it from yet, or a node whose pack the entry lacks): both are what
  // the weights hold for the model's life, so memory.limit and the stats count both.
  mi.weights_bytes = WeightsBytes(cfg.model_path) + mi.repacked_anon_bytes;
  if (const auto tok = cfg.dir / "tokenizer.json"; std::filesystem::exists(tok)) {
    mi.tokenizer_owned = Tokenizer::FromFile(tok);
    // A tokenizer whose ids reach past the graph's logits: a prompt with such a token fails
    // (clearly, per request). Said once here, naming both sizes. Not refused: real test models
    // pair a full tokenizer with a cut vocabulary (hf-internal-testing's tiny-random-gpt2: 50,295
    // tokens, 1,000 logits) and run every prompt whose ids stay below it.
    const size_t tokens = mi.tokenizer_owned->vocab_size();
    if (!cfg.is_encoder && cfg.vocab_size > 0 && tokens > static_cast<size_t>(cfg.vocab_size)) {
      EBB_LOG_WARN(
          "tokenizer.json of '{}' has ids up to {} ({} tokens), but the model's vocabulary "
          "(genai_config.json's vocab_size, the graph's logits) has {}: a prompt with an id of "
          "{} or more will be refused; check that the tokenizer is this model's",
          cfg.dir.string(), tokens - 1, tokens, cfg.vocab_size, cfg.vocab_size);
    }
  }
  mi.cpu_memory = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
}

// Step 3, the weights' charge: refuses an arena cap the weights already exceed, makes the KV
// pool, and charges the weights to memory.limit.
void ChargeWeights(ModelImpl& mi, const EffectiveSessionOptions& session) {
  const ModelOptions& options = mi.options;
  if (mi.arena_max_mem > 0) {
    // ORT reserves the weights in the arena without checking the cap; once the arena holds more
    // than max_mem, ORT computes the room left as limit - allocated in unsigned arithmetic and
    // enforces no cap at all (measured: max_mem=8MiB let a step take 76 MiB). Refuse that.
    const ArenaStats a = ReadCpuArenaStats(*mi.session, mi.cpu_memory);
    if (a.available && a.total_allocated_bytes > static_cast<int64_t>(mi.arena_max_mem)) {
      // What is in the arena at this point: the initializers (unless
      // use_device_allocator_for_initializers=1) and the kernels' prepacked copies of them, which
      // ORT allocates from the arena whatever that key says: SessionState::
      // PrepackConstantInitializedTensors (session_state.cc) hands PrePack the kernel's default
      // allocator, kernel->Info().GetAllocator(0, OrtMemTypeDefault), the session's CPU arena;
      // the key only changes how session_state_utils loads the initializers themselves.
      // Measured: minilm-shape-fp32 keeps 40.5 MiB there with the key set, none with the model
      // cache (prepacked blobs read from its file) or disable_prepacking=1.
      auto set = [&](const std::string& key) { return session.IsOn(key); };
      std::string fix;
      if (!set("session.use_device_allocator_for_initializers")) {
        fix += "session.use_device_allocator_for_initializers=1 for the weights, and ";
      }
      fix += mi.weights_entry.empty() && !set("session.disable_prepacking")
                 ? "for ORT's prepacked copies of them the model cache (model_cache.dir, on by "
                   "default) or session.disable_prepacking=1 (slower matmuls)"
                 : "fewer or smaller weights";
      throw Error(ErrorCode::InvalidArgument,
                  "arena.max_mem=" + std::to_string(mi.arena_max_mem) + " (" +
                      FormatBytes(mi.arena_max_mem) + ") is below the " +
                      FormatBytes(static_cast<uint64_t>(a.total_allocated_bytes)) +
                      " the model's weights and ORT's prepacked copies of them already take in "
                      "the arena, and ONNX Runtime then enforces no cap at all: raise "
                      "arena.max_mem above that, or keep them out of the arena: " +
                      fix);
    }
  }
  mi.kv_pool = MakeKvPool(mi, options);  // on the device when the session runs on one
  // The runtime-wide budget (memory.limit) sees every KV allocation of every model. The pool
  // holds the governor by reference: the model holds the host, which owns the governor.
  MemoryGovernor& gov = mi.host->governor();
  mi.kv_pool->set_admit_fn([&gov](uint64_t b, bool may_reclaim) { gov.Admit(b, may_reclaim); },
                           [&gov](uint64_t b) { gov.Release(b); });
  // memory.limit covers the weights too: refused here (ResourceExhausted), the load fails, frees
  // what it built and leaves the runtime's limit as it was.
  const uint64_t previous_limit = gov.limit();
  if (options.memory_limit_bytes > 0) gov.set_limit(options.memory_limit_bytes);
  try {
    gov.ChargeWeights(mi.weights_bytes, mi.id);
  } catch (...) {
    gov.set_limit(previous_limit);
    throw;
  }
  mi.weights_charged = true;
  mi.anon_weights_charged = true;
  gov.AddModel(1);
  mi.registered = true;
}

// Step 4, the model's description (ModelInfo) and its KV geometry.
void BuildInfo(ModelImpl& mi, const EffectiveSessionOptions& session,
               const std::optional<std::map<OpId, int>>& graph_ops, const ProviderPlan& providers,
               const std::string& placement) {
  const GenaiConfig& cfg = mi.config;
  ModelInfo& info = mi.info;
  info.path = cfg.dir;
  info.type = cfg.model_type;
  info.is_encoder = cfg.is_encoder;
  info.vocab_size = cfg.vocab_size;
  info.context_length = cfg.is_encoder ? cfg.encoder.max_length : cfg.context_length;
  info.num_layers = cfg.num_hidden_layers;
  info.num_kv_heads = cfg.num_key_value_heads;
  info.head_size = cfg.head_size;
  // Padding and the KV layout follow the graph's attention op, not a config flag. An encoder
  // has no KV cache (its KvPool exists and stays at 0). ebb.cpu.GroupQueryAttention (the custom
  // op of bench/llamacpp/libebb_cpu_ops.so) keeps com.microsoft's contract: right padding, and
  // present written in place into past's buffer when both are bound to it.
  info.uses_gqa =
      !cfg.is_encoder && (graph_ops ? graph_ops->count({"com.microsoft", "GroupQueryAttention"}) +
                                              graph_ops->count({"ebb.cpu", "GroupQueryAttention"}) >
                                          0
                                    : cfg.search.past_present_share_buffer);
  info.past_present_share_buffer =
      cfg.search.past_present_share_buffer && info.uses_gqa && !mi.io.combined_kv;
  info.last_position_logits = !mi.io.logits_index.empty();
  // The operators as the session runs them: cpu_ops moved some nodes to ebb.cpu.
  std::optional<std::map<OpId, int>> ops = graph_ops;
  const CpuOpsPlan& moved = mi.cpu_ops_moved;
  if (ops) ApplyCpuOpsToKernels(moved, &*ops);
  mi.attention_cost_follows_keys = ops &&
                                   ops->count({"com.microsoft", "GroupQueryAttention"}) == 0 &&
                                   ops->count({kCpuOpsDomain, "GroupQueryAttention"}) > 0;
  info.kernels = ops ? DescribeModelKernels(*ops, CpuFlags(), CustomOpsLibrary(session),
                                            providers.FirstAccelerator(),
                                            moved.moved() > 0 ? mi.options.cpu_ops : "")
                     : "unknown (ebb could not list the graph's operators; see the log)";
  if (!placement.empty()) {
    info.kernels += "; " + placement;
    EBB_LOG_INFO("model '{}' kernels: {}", mi.id, info.kernels);
  }
  info.eos_token_ids = cfg.eos_token_ids;
  info.pad_token_id = cfg.pad_token_id >= 0
                          ? cfg.pad_token_id
                          : (cfg.eos_token_ids.empty() ? 0 : cfg.eos_token_ids[0]);
  info.bos_token_id = cfg.bos_token_id;
  if (!cfg.is_encoder) {
    KvShape& kv = mi.kv_shape;
    kv.num_layers = info.num_layers;
    kv.kv_heads = info.num_kv_heads;
    kv.head_size = info.head_size;
    kv.batch = 1;
    kv.combined = mi.io.combined_kv;
    kv.elem_type = mi.io.kv_type;
    kv.elem_bytes = mi.io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  }
  info.kv_bytes_per_token = cfg.is_encoder ? 0 : mi.kv_shape.BytesPerToken();
}

// Step 5, the memory wiring: the constraint and prefix caches (their memory reclaimable by the
// budget), the shrink controller and its policies, and the run options.
void WireMemory(ModelImpl& mi, const ProviderPlan& providers, ModelSteps steps) {
  const GenaiConfig& cfg = mi.config;
  const ModelOptions& options = mi.options;
  if (!cfg.is_encoder) {
    // Compiled output constraints (json_schema, regex, grammar), bounded; nothing is built
    // until a request asks for one.
    mi.constraints = std::make_unique<internal::ConstraintCache>(
        mi.tokenizer_owned.get(), options.constraint_cache_max_bytes);
    // The prefix cache (off at prefix_cache.max_bytes=0; Tier 2 can turn it on). It gives its
    // memory back before the model's KV budget or memory.limit refuses anything (any model's).
    mi.prefix_cache = std::make_unique<PrefixCache>(*mi.kv_pool, mi.info.kv_bytes_per_token,
                                                    options.prefix_cache_max_bytes);
    PrefixCache* prefixes = mi.prefix_cache.get();
    mi.kv_pool->set_reclaim_fn([prefixes](uint64_t bytes) { return prefixes->Drop(bytes); });
    mi.prefix_reclaimer = mi.host->governor().AddReclaimer(
        [prefixes](uint64_t bytes) { return prefixes->Drop(bytes); });
  }
  Model* raw = &mi;  // the controller lives inside the model: no ownership cycle
  // A gpu:N shrink key is refused at load when no provider is a GPU (execution_provider=cpu
  // included), not left to fail every Run().
  mi.shrink = std::make_unique<ShrinkController>(
      mi.has_cpu_arena, providers.has_gpu(), providers.Describe(),
      [raw, step = std::move(steps.shrink)] { step(*raw); },
      [&mi] {
        if (mi.kv_pool) mi.kv_pool->Trim();
        TrimHeap();
      });
  if (mi.kv_pool->device() != nullptr && mi.device && mi.device->provider == "webgpu") {
    mi.shrink->set_webgpu_device(mi.device->Name(),
                                 [&mi](bool on) { mi.kv_pool->set_keep_nothing(on); });
  }
  mi.prefill_step = std::move(steps.prefill);
  if (mi.prefix_cache) {
    mi.shrink->set_drop_cache([&mi] { mi.prefix_cache->Drop(UINT64_MAX); });
  }
  // Run options: the config's, then the user's, through the one route every later change takes
  // (the same checks and did-you-mean warnings on every surface). An empty value means "unset"
  // (genai_config.json writes "memory.enable_memory_arena_shrinkage": "" for "off").
  mi.run_options = std::make_unique<RunOptionLedger>(mi.id, *mi.shrink, mi.prefix_cache.get());
  for (const auto& [k, v] : cfg.run_options) {
    if (v.empty()) continue;
    try {
      mi.run_options->Set(k, v);
    } catch (const Error& e) {
      throw Error(e.code(), "genai_config.json's run_options of '" + mi.id + "': " + e.what() +
                                "; fix or remove the entry");
    }
  }
  for (const auto& [k, v] : options.run_options) mi.run_options->Set(k, v);
  if (options.shrink_every > 0) mi.shrink->ShrinkEvery(options.shrink_every);
  if (options.shrink_above_bytes > 0) mi.shrink->ShrinkAbove(options.shrink_above_bytes);
  mi.run_options->SealLoad();
}

// The one load line (the model manager adds none): what, how long, what it costs in memory.
void LogLoad(const ModelImpl& mi, std::chrono::steady_clock::time_point load_start) {
  const GenaiConfig& cfg = mi.config;
  const ModelInfo& info = mi.info;
  const ProcessMemory pm = ReadProcessMemory();
  const std::string cost = fmt::format(
      "in {:.0f} ms; weights {} ({}); process RSS {}, anonymous {}",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
          .count(),
      FormatBytes(mi.weights_bytes),
      mi.repacked_anon_bytes == 0
          ? std::string(WeightsStateName(mi.WeightsState()))
          : fmt::format("{}, of which {} repacked by ebb's int4 matmul",
                        WeightsStateName(mi.WeightsState()), FormatBytes(mi.repacked_anon_bytes)),
      FormatBytes(static_cast<uint64_t>(std::max<int64_t>(0, pm.rss_bytes))),
      FormatBytes(static_cast<uint64_t>(std::max<int64_t>(0, pm.anon_bytes))));
  if (cfg.is_encoder) {
    EBB_LOG_INFO(
        "loaded {} as '{}' {} (encoder {}, {}; max {} tokens from {}; output {})", cfg.dir.string(),
        mi.id, cost, cfg.model_type, cfg.encoder.layout, cfg.encoder.max_length,
        cfg.encoder.max_length_source,
        mi.encoder.last_hidden_state.empty() ? mi.encoder.pooled : mi.encoder.last_hidden_state);
  } else {
    EBB_LOG_INFO(
        "loaded {} as '{}' {} ({}, {} layers, kv {} B/token, kv_cache.mode={}, {}-padded, {} KV, "
        "{} logits)",
        cfg.dir.string(), mi.id, cost, cfg.model_type, cfg.num_hidden_layers,
        info.kv_bytes_per_token, KvModeName(mi.options.kv_mode), info.uses_gqa ? "right" : "left",
        info.past_present_share_buffer ? "shared" : "ping-pong",
        info.last_position_logits ? "last-position" : "all-position");
  }
}

// Step 6, after the load: give back what loading left resident, guard mapped weights, start the
// weights-release thread and the cache build.
void FinishLoad(ModelImpl& mi, PressureSource pressure) {
  const ModelOptions& options = mi.options;
  // Parsing and optimising the graph leaves freed heap behind (about the size of the model
  // file's protobuf); glibc keeps it resident unless asked.
  TrimHeap();
  // ORT copied or prepacked what it needs out of the mapped external-data file; the file pages
  // it touched doing so would otherwise stay in RSS (file_pages.h).
  if (options.release_file_pages) {
    // A cache entry is left alone: with prepacked blobs its pages are the weights the session
    // runs from, and paging out an entry also evicts it from the page cache, so the next load
    // would fault it back from disk in small reads (docs/memory.md). Its pages are clean and
    // shared; the kernel reclaims them when it needs to.
    const FilePagesRelease r = ReleaseFilePages(mi.config.dir, mi.weights_entry);
    if (r.before.resident_bytes > 0) {
      EBB_LOG_INFO("released {} of resident model-file pages ({} mappings; {} still resident)",
                   FormatBytes(r.before.resident_bytes -
                               std::min(r.before.resident_bytes, r.after.resident_bytes)),
                   r.before.num_mappings, FormatBytes(r.after.resident_bytes));
    }
  }
  if (!mi.weights_entry.empty()) {
    // A cache file truncated or rewritten under the mapping must fail the request that read it,
    // not kill the process with SIGBUS (memory/mapped_file_guard.h).
    mi.weights_guard = MappedFileGuard::Protect(ModelCache::WeightFiles(mi.weights_entry));
  }
  mi.loaded_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  mi.StartWeightsRelease(options.release_weights_after_s, options.release_weights_on_pressure,
                         std::move(pressure));
}

}  // namespace

std::shared_ptr<Model> BuildModel(std::shared_ptr<ModelHost> host, std::string id,
                                  const std::filesystem::path& dir, const ModelOptions& options,
                                  ModelSteps steps) {
  EnsureOrtApi();
  const auto load_start = std::chrono::steady_clock::now();
  AnonPeakSampler load_memory;  // the load's anonymous peak (WeightsMemory::load_peak_anon_bytes)
  auto impl = std::make_shared<ModelImpl>();
  ModelImpl& mi = *impl;
  mi.id = std::move(id);
  mi.host = std::move(host);
  mi.config = LoadModelFolderConfig(dir);
  mi.options = options;
  const GenaiConfig& cfg = mi.config;
  // The session options, config then user (the one merge: ort/session_options.h).
  const EffectiveSessionOptions session(cfg.session_options, options);
  PressureSource pressure = CheckLoadOptions(mi, options);
  Ort::SessionOptions so = PrepareSessionOptions(mi, session);
  // A FIFO would block ORT's read forever, an unreadable file would read as "corrupt".
  CheckRegularFile(cfg.model_path, "the model's ONNX file");
  const std::optional<std::map<OpId, int>> graph_ops = TryGraphOps(cfg.model_path);
  const bool graph_unread = PlanCpuOpsForLoad(mi, session, so);
  // The compiled-model cache (model_cache.h): load from its entry, or write the optimised graph,
  // load the model normally and finish the entry in the background once the load is done.
  ModelCache cache = ModelCache::Plan(cfg.model_path, options.model_cache_dir, session,
                                      cfg.provider_options, options);
  // The key says cpu_ops=V whatever this load moved: a graph built without reading the model
  // (out of memory or descriptors) would keep ORT's kernels under it for good.
  if (graph_unread) cache.NoBuild("cpu_ops could not read the model file to move its nodes");
  ModelCache::BuildJob job;
  if (cache.action() != ModelCache::Action::kOff) job = MakeCacheBuildJob(mi, so);
  std::string placement;
  CreateSession(mi, session, so, cache, job, &placement);
  ResolveGraphIo(mi);
  ChargeWeights(mi, session);
  const ProviderPlan providers = ResolveProviders(cfg.provider_options, options);
  BuildInfo(mi, session, graph_ops, providers, placement);
  WireMemory(mi, providers, std::move(steps));
  LogLoad(mi, load_start);
  FinishLoad(mi, std::move(pressure));
  mi.load_peak_anon_bytes = load_memory.Stop();
  mi.load_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - load_start)
                                         .count());
  if (!mi.weights_entry.empty()) {
    mi.cache_state = "loaded";
  } else if (cache.has_optimized_graph()) {
    mi.cache_state = StartCacheBuild(mi, std::move(cache), std::move(job)) ? "building" : "skipped";
  } else {
    mi.cache_state = cache.build_skipped() ? "skipped" : "off";
  }
  return impl;
}

}  // namespace internal

}  // namespace ebb
