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
#include <vector>

#include "core/files.h"
#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/process_memory.h"
#include "ebb/version.h"
#include "memory/file_pages.h"
#include "memory/heap_trim.h"
#include "memory/mapped_file_guard.h"
#include "memory/memory_governor.h"
#include "model/cache_builder.h"
#include "model/ep_placement.h"
#include "model/graph_ops.h"
#include "model/last_logits.h"
#include "model/model_cache.h"
#include "model/model_device.h"
#include "model/model_impl.h"
#include "model/model_info.h"
#include "model/model_kernels.h"
#include "model/probe_run.h"
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

std::vector<std::pair<std::string, ONNXTensorElementDataType>> GraphNames(Ort::Session& s,
                                                                          bool inputs) {
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<std::pair<std::string, ONNXTensorElementDataType>> out;
  const size_t n = inputs ? s.GetInputCount() : s.GetOutputCount();
  for (size_t i = 0; i < n; ++i) {
    std::string name =
        (inputs ? s.GetInputNameAllocated(i, alloc) : s.GetOutputNameAllocated(i, alloc)).get();
    Ort::TypeInfo ti = inputs ? s.GetInputTypeInfo(i) : s.GetOutputTypeInfo(i);
    ONNXTensorElementDataType t = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (ti.GetONNXType() == ONNX_TYPE_TENSOR) t = ti.GetTensorTypeAndShapeInfo().GetElementType();
    out.emplace_back(std::move(name), t);
  }
  return out;
}

bool IsIndexType(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
}

bool IsFloatType(ONNXTensorElementDataType t) {
  return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

// The custom_ops_library the session registers; empty when none is named.
std::string CustomOpsLibrary(const EffectiveSessionOptions& session) {
  const std::string* library = session.Find("custom_ops_library");
  return library == nullptr || *library == "none" ? std::string() : *library;
}

// Resolves the config's names against the graph; every problem names the file and the tensor.
// Maps ORT's session-creation failure to what is wrong: a refused option, threads that could
// not start, a missing external-data file, or (only when ORT says so) a file that is not ONNX.
Error SessionCreateError(const GenaiConfig& cfg, const EffectiveSessionOptions& session,
                         const std::string& ort_message) {
  const std::string where = EscapeForMessage(cfg.model_path.string(), 1024) + ": ";
  const std::string msg = EscapeForMessage(ort_message, 600);
  if (ort_message.find("pthread_create") != std::string::npos ||
      ort_message.find("Resource temporarily unavailable") != std::string::npos) {
    return Error(ErrorCode::ResourceExhausted,
                 where + "ONNX Runtime could not start its threads (" + msg +
                     "); raise the process's limits (ulimit -u, ulimit -v) or lower "
                     "intra_op_num_threads");
  }
  if (ort_message.find("bad_alloc") != std::string::npos) {
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

DecoderIo ResolveIo(const GenaiConfig& cfg, Ort::Session& session) {
  const auto inputs = GraphNames(session, true);
  const auto outputs = GraphNames(session, false);
  auto find = [](const auto& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == name; });
  };
  const std::string where = cfg.model_path.string() + ": ";
  auto require = [&](const auto& list, const std::string& name, const char* kind,
                     const char* field) {
    auto it = find(list, name);
    if (it == list.end()) {
      std::string have;
      for (const auto& p : list) have += (have.empty() ? "" : ", ") + p.first;
      throw Error(ErrorCode::InvalidArgument,
                  where + "the graph has no " + kind + " '" + name + "' named by " +
                      cfg.config_path.filename().string() + " " + field + "; the graph's " + kind +
                      "s are: " + have);
    }
    return it->second;
  };

  DecoderIo io;
  std::set<std::string> used;
  io.input_ids = cfg.io.input_ids;
  io.input_ids_type = require(inputs, io.input_ids, "input", "/model/decoder/inputs/input_ids");
  used.insert(io.input_ids);
  if (!IsIndexType(io.input_ids_type)) {
    throw Error(ErrorCode::InvalidArgument, where + "input '" + io.input_ids +
                                                "' must be int32 or int64, got " +
                                                ElementTypeName(io.input_ids_type));
  }
  if (auto it = find(inputs, cfg.io.attention_mask); it != inputs.end()) {
    io.attention_mask = it->first;
    io.attention_mask_type = it->second;
    used.insert(it->first);
  }
  if (auto it = find(inputs, cfg.io.position_ids); it != inputs.end()) {
    io.position_ids = it->first;
    io.position_ids_type = it->second;
    used.insert(it->first);
  }
  io.logits = cfg.io.logits;
  io.logits_type = require(outputs, io.logits, "output", "/model/decoder/outputs/logits");
  if (!IsFloatType(io.logits_type)) {
    throw Error(ErrorCode::InvalidArgument, where + "output '" + io.logits +
                                                "' must be float32 or float16, got " +
                                                ElementTypeName(io.logits_type));
  }
  // The config's vocab_size sizes every logits buffer: it must be the graph's own width when
  // the graph states one (a wrong one read garbage or sized buffers by a corrupt number).
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    Ort::AllocatorWithDefaultOptions alloc;
    if (session.GetOutputNameAllocated(i, alloc).get() != io.logits) continue;
    const std::vector<int64_t> dims =
        session.GetOutputTypeInfo(i).GetTensorTypeAndShapeInfo().GetShape();
    if (!dims.empty() && dims.back() > 0 && dims.back() != cfg.vocab_size) {
      throw Error(
          ErrorCode::InvalidArgument,
          where + "genai_config.json's model.vocab_size is " + std::to_string(cfg.vocab_size) +
              " but the graph's '" + io.logits + "' output is " + std::to_string(dims.back()) +
              " wide; fix vocab_size in genai_config.json to " + std::to_string(dims.back()));
    }
  }
  io.combined_kv = !cfg.io.past_combined.empty();
  for (int l = 0; l < cfg.num_hidden_layers; ++l) {
    std::vector<std::pair<std::string, std::string>> pairs;
    if (io.combined_kv) {
      pairs.emplace_back(LayerName(cfg.io.past_combined, l), LayerName(cfg.io.present_combined, l));
    } else {
      pairs.emplace_back(LayerName(cfg.io.past_key, l), LayerName(cfg.io.present_key, l));
      pairs.emplace_back(LayerName(cfg.io.past_value, l), LayerName(cfg.io.present_value, l));
    }
    for (const auto& [past, present] : pairs) {
      const auto t = require(inputs, past, "input", "/model/decoder/inputs (past names)");
      require(outputs, present, "output", "/model/decoder/outputs (present names)");
      if (!IsFloatType(t)) {
        throw Error(ErrorCode::InvalidArgument,
                    where + "KV input '" + past + "' must be float32 or float16");
      }
      io.kv_type = t;
      io.past_names.push_back(past);
      io.present_names.push_back(present);
      used.insert(past);
    }
  }
  if (auto it = find(inputs, kLogitsIndexInput); it != inputs.end()) {
    io.logits_index = kLogitsIndexInput;
    used.insert(io.logits_index);
  }
  for (const auto& [name, type] : inputs) {
    if (!used.count(name)) {
      throw Error(ErrorCode::InvalidArgument,
                  where + "graph input '" + name +
                      "' is not one ebb knows how to feed (input_ids, attention_mask, "
                      "position_ids, past KV); check the names in " +
                      cfg.config_path.filename().string());
    }
  }
  if (cfg.num_hidden_layers * (io.combined_kv ? 1 : 2) !=
      static_cast<int>(std::count_if(inputs.begin(), inputs.end(), [&](const auto& p) {
        return std::find(io.past_names.begin(), io.past_names.end(), p.first) !=
               io.past_names.end();
      }))) {
    throw Error(ErrorCode::InvalidArgument, where + "KV inputs do not match num_hidden_layers");
  }
  return io;
}

// An encoder's graph: index inputs among input_ids / attention_mask / token_type_ids (config
// names), and last_hidden_state and/or a pooled output (sentence_embedding, pooler_output).
EncoderIo ResolveEncoderIo(const GenaiConfig& cfg, Ort::Session& session) {
  const auto inputs = GraphNames(session, true);
  const auto outputs = GraphNames(session, false);
  const std::string where = cfg.model_path.string() + ": ";
  auto list = [](const auto& v) {
    std::string out;
    for (const auto& p : v) out += (out.empty() ? "" : ", ") + p.first;
    return out;
  };
  EncoderIo io;
  const EncoderIoNames& n = cfg.encoder_io;
  for (const auto& [name, type] : inputs) {
    std::string* slot = nullptr;
    ONNXTensorElementDataType* slot_type = nullptr;
    if (name == n.input_ids) {
      slot = &io.input_ids;
      slot_type = &io.input_ids_type;
    } else if (name == n.attention_mask) {
      slot = &io.attention_mask;
      slot_type = &io.attention_mask_type;
    } else if (name == n.token_type_ids) {
      slot = &io.token_type_ids;
      slot_type = &io.token_type_ids_type;
    } else {
      throw Error(ErrorCode::InvalidArgument,
                  where + "encoder input '" + name + "' is not one ebb knows how to feed (" +
                      n.input_ids + ", " + n.attention_mask + ", " + n.token_type_ids + ")");
    }
    if (!IsIndexType(type)) {
      throw Error(
          ErrorCode::InvalidArgument,
          where + "input '" + name + "' must be int32 or int64, got " + ElementTypeName(type));
    }
    *slot = name;
    *slot_type = type;
  }
  if (io.input_ids.empty()) {
    throw Error(ErrorCode::InvalidArgument, where + "the encoder graph has no input '" +
                                                n.input_ids + "'; its inputs are: " + list(inputs));
  }
  for (const auto& [name, type] : outputs) {
    // sentence-transformers' own ONNX export names the token vectors token_embeddings.
    const bool hidden = name == n.last_hidden_state ||
                        (name == "token_embeddings" && io.last_hidden_state != n.last_hidden_state);
    const bool pooled = name == "sentence_embedding" || name == "pooler_output";
    if (!hidden && !pooled) continue;
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      throw Error(ErrorCode::InvalidArgument,
                  where + "output '" + name + "' must be float32, got " + ElementTypeName(type));
    }
    if (hidden) io.last_hidden_state = name;
    // sentence_embedding (sentence-transformers' own pooling) wins over BERT's pooler_output.
    if (pooled && (io.pooled.empty() || name == "sentence_embedding")) io.pooled = name;
  }
  if (io.last_hidden_state.empty() && io.pooled.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                where + "the encoder graph has none of the outputs ebb reads (" +
                    n.last_hidden_state +
                    ", sentence_embedding, pooler_output); its outputs are: " + list(outputs));
  }
  io.hidden_size = cfg.hidden_size;
  return io;
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
// (last_logits.h) when asked and possible, else as it is. Throws the Ort::Exception of the plain
// load when the model itself does not load.
std::unique_ptr<Ort::Session> CreateSourceSession(const GenaiConfig& cfg, bool last_logits,
                                                  Ort::SessionOptions so) {
  // Last-position logits: ORT loads a rewritten copy of the graph from a memory file, with the
  // external data still read from the model's folder.
  if (!cfg.is_encoder && last_logits) {
    std::string why_not;
    std::optional<RewrittenModel> rewritten =
        RewriteForLastLogits(cfg.model_path, cfg.io.logits, cfg.hidden_size, &why_not);
    if (!rewritten) {
      EBB_LOG_INFO("prefill_logits=last: {} keeps every position's logits ({})",
                   cfg.model_path.string(), why_not);
    } else {
      Ort::SessionOptions o = so.Clone();
      o.AddConfigEntry("session.model_external_initializers_file_folder_path",
                       cfg.model_path.parent_path().c_str());
      try {
        return std::make_unique<Ort::Session>(OrtEnvironment(), rewritten->path().c_str(), o);
      } catch (const Ort::Exception& e) {
        // ebb's rewrite must never be why a model does not load: load the file as it is (which
        // reports the model's own problems, if that is what failed).
        EBB_LOG_WARN(
            "prefill_logits=last: the rewritten graph of {} did not load ({}); loading it "
            "as it is",
            cfg.model_path.string(), internal::OneLine(e.what()));
      }
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

uint64_t ModelImpl::AcquireGeneratorSlot(bool in_call) {
  MutexLock lock(slot_mu_);
  if (released_) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + id + "' was unloaded; load it again to generate");
  }
  if (weights_released_) {
    // The weights come back into memory with this request: memory.limit charges them again
    // (ResourceExhausted, naming the budget, when it has no room; the model stays released).
    if (host && !weights_charged) {
      host->governor().ChargeWeights(weights_bytes, id);
      weights_charged = true;
    }
    weights_released_ = false;
  }
  const uint64_t slot = next_slot_++;
  SlotState st;
  st.in_call = in_call;
  st.thread = std::this_thread::get_id();
  slots_[slot] = st;
  return slot;
}

void ModelImpl::BeginCall(uint64_t slot) {
  MutexLock lock(slot_mu_);
  SlotState& st = slots_.at(slot);
  // While an unload waits, the open generations it waits for go on; nothing new starts.
  if (released_ && (st.detached || !st.request_open)) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + id +
                    "' was unloaded while this generator was idle, which detached it; its state "
                    "is kept for reading, but it cannot run. Load the model again and create a "
                    "new generator");
  }
  st.in_call = true;
  st.thread = std::this_thread::get_id();
}

void ModelImpl::EndCall(uint64_t slot, bool request_open) noexcept {
  {
    MutexLock lock(slot_mu_);
    auto it = slots_.find(slot);
    if (it == slots_.end()) return;
    it->second.in_call = false;
    it->second.request_open = request_open;
  }
  slot_cv_.notify_all();
}

bool ModelImpl::weights_broken() const { return weights_guard && weights_guard->broken(); }

void ModelImpl::CheckWeightsIntact() const {
  if (!weights_broken()) return;
  throw Error(ErrorCode::Unavailable,
              "model '" + id + "': " + weights_guard->Describe() + " (cache entry " +
                  weights_entry.string() +
                  "); no token of this step was used. Unload and load the model again: the load "
                  "finds the entry changed and rebuilds it");
}

WeightsRelease ModelImpl::ReleaseWeights() {
  WeightsRelease r;
  MutexLock lock(slot_mu_);
  if (released_) {
    r.reason = "model '" + id + "' was unloaded";
    return r;
  }
  // The prefix cache is memory an idle model holds too: its unpinned blocks go, whatever the
  // weights (their copies are read by no step).
  if (prefix_cache) r.prefix_cache_freed_bytes = prefix_cache->Drop(UINT64_MAX);
  if (weights_entry.empty()) {
    r.reason =
        "the weights of '" + id +
        "' are ONNX Runtime's anonymous copies (the model was not loaded from a compiled-model "
        "cache entry), which cannot be dropped without unloading; load it again once its cache "
        "entry is built (model_cache.dir), or unload it";
    return r;
  }
  if (!slots_.empty()) {
    r.reason =
        std::to_string(slots_.size()) + " request(s) running on '" + id + "'; retry when idle";
    return r;
  }
  const FilePagesRelease pages = ReleaseFilePages(weights_entry);
  r.resident_before_bytes = pages.before.resident_bytes;
  r.resident_after_bytes = pages.after.resident_bytes;
  r.released = true;
  if (!weights_released_) {
    if (weights_charged && host) {
      host->governor().ReleaseWeights(weights_bytes);
      weights_charged = false;
    }
    weights_released_ = true;
    ++num_weight_releases_;
  }
  EBB_LOG_INFO("released the weights of '{}': {} resident before, {} after", id,
               FormatBytes(r.resident_before_bytes), FormatBytes(r.resident_after_bytes));
  return r;
}

ebb::WeightsState ModelImpl::WeightsState() const {
  MutexLock lock(slot_mu_);
  return weights_entry.empty() ? ebb::WeightsState::kAnonymous
         : weights_broken()    ? ebb::WeightsState::kBroken
         : weights_released_   ? ebb::WeightsState::kReleased
                               : ebb::WeightsState::kFileBacked;
}

WeightsMemory ModelImpl::WeightsStats() const {
  WeightsMemory w;
  w.state = WeightsState();
  {
    MutexLock lock(slot_mu_);
    w.num_releases = num_weight_releases_;
  }
  if (weights_entry.empty()) {
    w.anon_bytes = weights_bytes;
    return w;
  }
  std::error_code ec;
  w.file_backed_bytes = std::filesystem::file_size(weights_entry / ModelCache::kDataFile, ec);
  if (ec) w.file_backed_bytes = 0;
  w.file_resident_bytes = ResidentFilePages(weights_entry).resident_bytes;
  return w;
}

void ModelImpl::StartWeightsRelease(int32_t after_idle_s, bool on_pressure,
                                    PressureSource pressure) {
  if ((after_idle_s <= 0 && !on_pressure) || weights_entry.empty()) return;
  if (on_pressure) {
    EBB_LOG_INFO(
        "'{}': releases its file-backed weights when idle under memory pressure of {} "
        "(memory.release_weights_on_pressure)",
        id, pressure.Describe());
  }
  idle_release_thread_ = std::thread([this, after_ms = int64_t{after_idle_s} * 1000, on_pressure,
                                      pressure = std::move(pressure)] {
    PressureSample previous;
    if (on_pressure) previous = ReadPressure(pressure);
    std::string pressure_reason;  // the last sample's reason, from pressure_at_ms on
    int64_t pressure_at_ms = -1;
    MutexLock lock(slot_mu_);
    while (!stop_idle_release_) {
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      const int64_t idle_ms = now - std::max(last_used_ms_.load(), loaded_unix_ms);
      const bool releasable = slots_.empty() && !weights_released_ && !released_;
      if (releasable && after_ms > 0 && idle_ms >= after_ms) {
        MutexUnlock unlocked(slot_mu_);
        EBB_LOG_INFO("'{}' idle for {} s (memory.release_weights_after_s): releasing its weights",
                     id, idle_ms / 1000);
        ReleaseWeights();
        continue;
      }
      if (on_pressure) {
        std::string reason;
        {
          // Sampled without the lock: a request may start meanwhile, which ReleaseWeights sees.
          MutexUnlock unlocked(slot_mu_);
          const PressureSample sample = ReadPressure(pressure);
          reason = PressureReason(previous, sample);
          previous = NextBaseline(previous, sample);
        }
        // Pressure seen while the model was busy still counts once it is idle, for as long as
        // PSI's own window (a counter that rose is seen by one sample only).
        if (!reason.empty()) {
          pressure_reason = std::move(reason);
          pressure_at_ms = now;
        }
        const bool recent = pressure_at_ms >= 0 && now - pressure_at_ms <= kPressureMemoryMs;
        if (recent && slots_.empty() && !weights_released_ && !released_ &&
            idle_ms >= kPressureMinIdleMs) {
          pressure_at_ms = -1;
          MutexUnlock unlocked(slot_mu_);  // then wait a poll period before the next sample
          EBB_LOG_INFO(
              "memory pressure on {}: {}; releasing the weights of idle '{}' "
              "(memory.release_weights_on_pressure)",
              pressure.Describe(), pressure_reason, id);
          ReleaseWeights();
        }
      }
      int64_t wait_ms = after_ms > 0 && releasable ? std::max<int64_t>(after_ms - idle_ms, 10)
                                                   : std::max<int64_t>(after_ms, kPressurePollMs);
      if (on_pressure) wait_ms = std::min(wait_ms, kPressurePollMs);
      idle_cv_.wait_for(slot_mu_, std::chrono::milliseconds(wait_ms));
    }
  });
}

void ModelImpl::ReleaseGeneratorSlot(uint64_t slot) noexcept {
  bool free_now = false;
  {
    MutexLock lock(slot_mu_);
    slots_.erase(slot);
    free_now = slots_.empty() && free_on_last_slot_;
    if (free_now) free_on_last_slot_ = false;
  }
  slot_cv_.notify_all();
  if (free_now) {
    try {
      FreeResources();
    } catch (...) {
      // A destructor's path never throws; FreeResources only resets what it owns.
    }
  }
}

int ModelImpl::live_generators() const {
  MutexLock lock(slot_mu_);
  return static_cast<int>(slots_.size());
}

bool ModelImpl::released() const {
  MutexLock lock(slot_mu_);
  return released_;
}

void ModelImpl::Touch() {
  last_used_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
}

void ModelImpl::Release(ReleaseMode mode) {
  int detached = 0;
  {
    MutexLock lock(slot_mu_);
    if (released_) return;
    released_ = true;
    stop_idle_release_ = true;
    idle_cv_.notify_all();
    const std::thread::id self = std::this_thread::get_id();
    const auto quiet = [&]() EBB_REQUIRES(slot_mu_) {
      for (const auto& [slot, st] : slots_) {
        if (st.in_call) return false;
        if (mode == ReleaseMode::kWaitForRequests && st.request_open && st.thread != self) {
          return false;
        }
      }
      return true;
    };
    while (!quiet()) slot_cv_.wait(slot_mu_);
    detached = static_cast<int>(slots_.size());
    for (auto& [slot, st] : slots_) st.detached = true;
    if (detached > 0) free_on_last_slot_ = true;
  }
  if (idle_release_thread_.joinable()) idle_release_thread_.join();
  if (detached > 0) {
    EBB_LOG_INFO(
        "unloading '{}' with {} idle generator(s) alive: they are detached and fail on "
        "their next call; the model's memory is freed when the last one is destroyed",
        id, detached);
    return;
  }
  FreeResources();
}

void ModelImpl::FreeResources() {
  if (idle_release_thread_.joinable() &&
      idle_release_thread_.get_id() != std::this_thread::get_id()) {
    idle_release_thread_.join();
  }
  // The background cache build reads the session: it finishes first (cache_builder.h).
  cache_builder.reset();
  // The guard's ranges must not outlive the session's mappings (an address reused by another
  // mapping would be absorbed).
  weights_guard.reset();
  // No generator is alive and none can start: free the session (and an arena it alone uses),
  // the batch's KV rows, the KV pool's retained memory, then the heap.
  {
    std::lock_guard<std::mutex> lock(decode_batcher_mu);
    decode_batcher.reset();
  }
  // The cache's blocks go back to the pool first (no reclaim may run on it after this). The
  // object itself stays until the model is destroyed: a Stats() reader may still hold the model.
  if (prefix_reclaimer != 0 && host) host->governor().RemoveReclaimer(prefix_reclaimer);
  prefix_reclaimer = 0;
  if (kv_pool) kv_pool->set_reclaim_fn(nullptr);
  if (prefix_cache) prefix_cache->Clear();
  if (constraints) constraints->Clear();
  // Device KV buffers are the session's allocator's: they go back before the session (and the
  // device context it may be the last holder of) does.
  if (kv_pool && kv_pool->device() != nullptr) kv_pool->Trim();
  session.reset();
  if (kv_pool) kv_pool->Trim();
  env_arena.reset();
  TrimHeap();
  if (weights_charged && host) {
    host->governor().ReleaseWeights(weights_bytes);
    weights_charged = false;
  }
}

uint64_t EstimateWeightsBytes(const std::filesystem::path& dir) {
  return WeightsBytes(LoadModelFolderConfig(dir).model_path);
}

// Builds the model's cache entry in the background (cache_builder.h). The build's own session
// holds a second, temporary copy of the weights, and ORT's saver about one more while it writes
// (measured on the phi shape: peak RSS 6.3 GiB with 2.2 GiB of weights during the build, against
// 2.2 GiB without): twice the weights are charged to memory.limit for the build's duration, and
// no build starts when the budget has no room for them.
void StartCacheBuild(ModelImpl& mi, const Ort::SessionOptions& so, ModelCache cache) {
  MemoryGovernor& gov = mi.host->governor();
  const uint64_t transient = 2 * mi.weights_bytes;
  try {
    gov.Admit(transient);
  } catch (const Error& e) {
    EBB_LOG_INFO("model cache: not building an entry for {} now: {}", mi.config.dir.string(),
                 e.what());
    return;
  }
  ModelCache::BuildJob job;
  job.session_options = so.Clone();
  job.create_source = [cfg = mi.config,
                       last = mi.options.last_position_logits](Ort::SessionOptions o) {
    return CreateSourceSession(cfg, last, std::move(o));
  };
  const bool shared = mi.info.past_present_share_buffer;
  job.probe = [&mi, shared](Ort::Session& s) {
    return ProbeOutputs(s, mi.config, mi.io, mi.encoder, shared);
  };
  job.reference = [&mi, shared] {
    return ProbeOutputs(*mi.session, mi.config, mi.io, mi.encoder, shared);
  };
  mi.cache_builder =
      std::make_unique<CacheBuilder>(std::move(cache), std::move(job), mi.config.dir.string(),
                                     [&gov, transient](bool) { gov.Release(transient); });
}

std::unique_ptr<ChatTemplate> LoadChatTemplateOption(const std::filesystem::path& dir,
                                                     const std::string& value) {
  if (IsChatTemplateText(value)) {
    try {
      return ChatTemplate::ParseForModelDir(value, "chat_template", dir);
    } catch (const Error& e) {
      throw Error(e.code(),
                  std::string("the chat_template option's template does not parse: ") + e.what());
    }
  }
  const std::filesystem::path file(value);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw Error(ErrorCode::NotFound,
                "chat_template=" + EscapeForMessage(value, 1024) +
                    ": no such file (give a Jinja chat template file, as tokenizer_config.json's "
                    "\"chat_template\", or the template text itself)");
  }
  try {
    return ChatTemplate::ParseForModelDir(
        ReadRegularFile(file, kMaxConfigFileBytes, "chat template file"), file.string(), dir);
  } catch (const Error& e) {
    throw Error(e.code(), "chat_template=" + EscapeForMessage(value, 1024) +
                              " is not a chat template ebb can render: " + e.what());
  }
}

std::shared_ptr<ModelImpl> BuildModel(std::shared_ptr<ModelHost> host, std::string id,
                                      const std::filesystem::path& dir, const ModelOptions& options,
                                      ModelSteps steps) {
  EnsureOrtApi();
  const auto load_start = std::chrono::steady_clock::now();
  auto impl = std::make_shared<ModelImpl>();
  impl->id = std::move(id);
  impl->host = std::move(host);
  impl->config = LoadModelFolderConfig(dir);
  impl->options = options;
  const GenaiConfig& cfg = impl->config;
  // The session options, config then user (the one merge: ort/session_options.h).
  const EffectiveSessionOptions session(cfg.session_options, options);
  // Before anything heavy: a template given at load that does not parse fails the load now.
  if (!options.chat_template.empty()) {
    impl->chat_template_owned = LoadChatTemplateOption(cfg.dir, options.chat_template);
  }
  // Checked before anything is loaded; used once the weights are known to be file-backed.
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

  // The accelerator, before ORT sees the providers: WebGPU's device options are checked
  // against the models already on it, and what a device cannot do is refused now.
  PrepareDevice(*impl, ResolveProviders(cfg.provider_options, options), options);
  ArenaConfig arena_cfg;
  bool use_env_allocators = false;
  Ort::SessionOptions so =
      BuildSessionOptions(session, cfg.provider_options, options, &impl->has_cpu_arena, &arena_cfg,
                          &use_env_allocators);
  if (!arena_cfg.empty() || use_env_allocators) {
    // use_env_allocators alone shares the env arena that is registered (or registers one with
    // ORT's defaults): the session then allocates from it, as the user asked.
    impl->env_arena = AcquireEnvArena(arena_cfg, /*any_config=*/arena_cfg.empty());
    if (auto it = impl->env_arena->config().find("max_mem");
        it != impl->env_arena->config().end()) {
      impl->arena_max_mem = it->second;
    }
  }
  // On an accelerator, ORT records which provider got each node, for the kernels line.
  if (impl->device) so.AddConfigEntry("session.record_ep_graph_assignment_info", "1");
  // A FIFO would block ORT's read forever, an unreadable file would read as "corrupt".
  CheckRegularFile(cfg.model_path, "the model's ONNX file");
  // The compiled-model cache (model_cache.h): load the cached graph with nothing left to
  // optimise and the weights (prepacked ones included) mapped from the entry; or load the model
  // normally and build the entry in the background once the load is done. A cache problem never
  // fails a load.
  const std::optional<std::map<OpId, int>> graph_ops = TryGraphOps(cfg.model_path);
  ModelCache cache = ModelCache::Plan(cfg.model_path, options.model_cache_dir, session,
                                      cfg.provider_options, options);
  if (cache.action() == ModelCache::Action::kLoad) {
    cache.Prefetch();
    Ort::SessionOptions cached_so = so.Clone();
    cached_so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
    try {
      impl->session =
          std::make_unique<Ort::Session>(OrtEnvironment(), cache.cached_model().c_str(), cached_so);
      cache.MarkUsed();
      impl->weights_entry = cache.entry();
      EBB_LOG_INFO("model cache: loaded {} from {} (graph already optimised, weights mapped)",
                   cfg.model_path.string(), cache.entry().string());
    } catch (const Ort::Exception& e) {
      cache.RebuildAfterFailedLoad(e.what());
    }
  }
  if (!impl->session) {
    try {
      impl->session = CreateSourceSession(cfg, options.last_position_logits, so.Clone());
    } catch (const Ort::Exception& e) {
      throw SessionCreateError(cfg, session, e.what());
    }
  }
  std::string placement;  // which nodes the accelerator runs, which fell back (ep_placement.h)
  if (impl->device) {
    placement = DescribeEpPlacement(ReadEpPlacement(*impl->session), impl->device->provider,
                                    OrtProviderName(impl->device->provider));
  }
  if (cfg.is_encoder) {
    impl->encoder = ResolveEncoderIo(cfg, *impl->session);
  } else {
    impl->io = ResolveIo(cfg, *impl->session);
  }
  impl->weights_bytes = WeightsBytes(cfg.model_path);
  if (const auto tok = cfg.dir / "tokenizer.json"; std::filesystem::exists(tok)) {
    impl->tokenizer_owned = Tokenizer::FromFile(tok);
    // A tokenizer whose ids reach past the graph's logits: a prompt with such a token fails
    // (clearly, per request). Said once here, naming both sizes. Not refused: real test models
    // pair a full tokenizer with a cut vocabulary (hf-internal-testing's tiny-random-gpt2: 50,295
    // tokens, 1,000 logits) and run every prompt whose ids stay below it.
    const size_t tokens = impl->tokenizer_owned->vocab_size();
    if (!cfg.is_encoder && cfg.vocab_size > 0 && tokens > static_cast<size_t>(cfg.vocab_size)) {
      EBB_LOG_WARN(
          "tokenizer.json of '{}' has ids up to {} ({} tokens), but the model's vocabulary "
          "(genai_config.json's vocab_size, the graph's logits) has {}: a prompt with an id of "
          "{} or more will be refused; check that the tokenizer is this model's",
          cfg.dir.string(), tokens - 1, tokens, cfg.vocab_size, cfg.vocab_size);
    }
  }
  impl->cpu_memory = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  if (impl->arena_max_mem > 0) {
    // ORT reserves the weights in the arena without checking the cap; once the arena holds more
    // than max_mem, ORT computes the room left as limit - allocated in unsigned arithmetic and
    // enforces no cap at all (measured: max_mem=8MiB let a step take 76 MiB). Refuse that.
    const ArenaStats a = ReadCpuArenaStats(*impl->session, impl->cpu_memory);
    if (a.available && a.total_allocated_bytes > static_cast<int64_t>(impl->arena_max_mem)) {
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
      fix += impl->weights_entry.empty() && !set("session.disable_prepacking")
                 ? "for ORT's prepacked copies of them the model cache (model_cache.dir, on by "
                   "default) or session.disable_prepacking=1 (slower matmuls)"
                 : "fewer or smaller weights";
      throw Error(ErrorCode::InvalidArgument,
                  "arena.max_mem=" + std::to_string(impl->arena_max_mem) + " (" +
                      FormatBytes(impl->arena_max_mem) + ") is below the " +
                      FormatBytes(static_cast<uint64_t>(a.total_allocated_bytes)) +
                      " the model's weights and ORT's prepacked copies of them already take in "
                      "the arena, and ONNX Runtime then enforces no cap at all: raise "
                      "arena.max_mem above that, or keep them out of the arena: " +
                      fix);
    }
  }
  impl->kv_pool = MakeKvPool(*impl, options);  // on the device when the session runs on one
  // The runtime-wide budget (memory.limit) sees every KV allocation of every model. The pool
  // holds the governor by reference: the model holds the host, which owns the governor.
  MemoryGovernor& gov = impl->host->governor();
  impl->kv_pool->set_admit_fn([&gov](uint64_t b, bool may_reclaim) { gov.Admit(b, may_reclaim); },
                              [&gov](uint64_t b) { gov.Release(b); });
  // memory.limit covers the weights too: refused here (ResourceExhausted), the load fails, frees
  // what it built and leaves the runtime's limit as it was.
  const uint64_t previous_limit = gov.limit();
  if (options.memory_limit_bytes > 0) gov.set_limit(options.memory_limit_bytes);
  try {
    gov.ChargeWeights(impl->weights_bytes, impl->id);
  } catch (...) {
    gov.set_limit(previous_limit);
    throw;
  }
  impl->weights_charged = true;
  gov.AddModel(1);
  impl->registered = true;

  // The providers the session was created with.
  const ProviderPlan providers = ResolveProviders(cfg.provider_options, options);
  ModelInfo& info = impl->info;
  info.path = cfg.dir;
  info.type = cfg.model_type;
  info.is_encoder = cfg.is_encoder;
  info.vocab_size = cfg.vocab_size;
  info.context_length = cfg.is_encoder ? cfg.encoder.max_length : cfg.context_length;
  info.num_layers = cfg.num_hidden_layers;
  info.num_kv_heads = cfg.num_key_value_heads;
  info.head_size = cfg.head_size;
  // Padding and the KV layout follow the graph's attention op, not a config flag. An encoder
  // has no KV cache (its KvPool exists and stays at 0).
  info.uses_gqa =
      !cfg.is_encoder && (graph_ops ? graph_ops->count({"com.microsoft", "GroupQueryAttention"}) > 0
                                    : cfg.search.past_present_share_buffer);
  info.past_present_share_buffer =
      cfg.search.past_present_share_buffer && info.uses_gqa && !impl->io.combined_kv;
  info.last_position_logits = !impl->io.logits_index.empty();
  info.kernels = graph_ops ? DescribeModelKernels(*graph_ops, CpuFlags(), CustomOpsLibrary(session),
                                                  providers.FirstAccelerator())
                           : "unknown (ebb could not list the graph's operators; see the log)";
  if (!placement.empty()) {
    info.kernels += "; " + placement;
    EBB_LOG_INFO("model '{}' kernels: {}", impl->id, info.kernels);
  }
  info.eos_token_ids = cfg.eos_token_ids;
  info.pad_token_id = cfg.pad_token_id >= 0
                          ? cfg.pad_token_id
                          : (cfg.eos_token_ids.empty() ? 0 : cfg.eos_token_ids[0]);
  info.bos_token_id = cfg.bos_token_id;
  if (!cfg.is_encoder) {
    KvShape& kv = impl->kv_shape;
    kv.num_layers = info.num_layers;
    kv.kv_heads = info.num_kv_heads;
    kv.head_size = info.head_size;
    kv.batch = 1;
    kv.combined = impl->io.combined_kv;
    kv.elem_type = impl->io.kv_type;
    kv.elem_bytes = impl->io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  }
  info.kv_bytes_per_token = cfg.is_encoder ? 0 : impl->kv_shape.BytesPerToken();
  if (!cfg.is_encoder) {
    // Compiled output constraints (json_schema, regex, grammar), bounded; nothing is built
    // until a request asks for one.
    impl->constraints = std::make_unique<internal::ConstraintCache>(
        impl->tokenizer_owned.get(), options.constraint_cache_max_bytes);
    // The prefix cache (off at prefix_cache.max_bytes=0; Tier 2 can turn it on). It gives its
    // memory back before the model's KV budget or memory.limit refuses anything (any model's).
    impl->prefix_cache = std::make_unique<PrefixCache>(*impl->kv_pool, info.kv_bytes_per_token,
                                                       options.prefix_cache_max_bytes);
    PrefixCache* prefixes = impl->prefix_cache.get();
    impl->kv_pool->set_reclaim_fn([prefixes](uint64_t bytes) { return prefixes->Drop(bytes); });
    impl->prefix_reclaimer =
        gov.AddReclaimer([prefixes](uint64_t bytes) { return prefixes->Drop(bytes); });
  }
  // The one load line (the model manager adds none): what, how long, what it costs in memory.
  const ProcessMemory pm = ReadProcessMemory();
  const std::string cost = fmt::format(
      "in {:.0f} ms; weights {} ({}); process RSS {}, anonymous {}",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
          .count(),
      FormatBytes(impl->weights_bytes), WeightsStateName(impl->WeightsState()),
      FormatBytes(static_cast<uint64_t>(std::max<int64_t>(0, pm.rss_bytes))),
      FormatBytes(static_cast<uint64_t>(std::max<int64_t>(0, pm.anon_bytes))));
  if (cfg.is_encoder) {
    EBB_LOG_INFO("loaded {} as '{}' {} (encoder {}, {}; max {} tokens from {}; output {})",
                 cfg.dir.string(), impl->id, cost, cfg.model_type, cfg.encoder.layout,
                 cfg.encoder.max_length, cfg.encoder.max_length_source,
                 impl->encoder.last_hidden_state.empty() ? impl->encoder.pooled
                                                         : impl->encoder.last_hidden_state);
  } else {
    EBB_LOG_INFO(
        "loaded {} as '{}' {} ({}, {} layers, kv {} B/token, kv_cache.mode={}, {}-padded, {} KV, "
        "{} logits)",
        cfg.dir.string(), impl->id, cost, cfg.model_type, cfg.num_hidden_layers,
        info.kv_bytes_per_token, KvModeName(options.kv_mode), info.uses_gqa ? "right" : "left",
        info.past_present_share_buffer ? "shared" : "ping-pong",
        info.last_position_logits ? "last-position" : "all-position");
  }
  ModelImpl& mi = *impl;
  Model* raw = impl.get();  // the controller lives inside the model: no ownership cycle
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
    const FilePagesRelease r = ReleaseFilePages(cfg.dir, impl->weights_entry);
    if (r.before.resident_bytes > 0) {
      EBB_LOG_INFO("released {} of resident model-file pages ({} mappings; {} still resident)",
                   FormatBytes(r.before.resident_bytes -
                               std::min(r.before.resident_bytes, r.after.resident_bytes)),
                   r.before.num_mappings, FormatBytes(r.after.resident_bytes));
    }
  }
  if (!impl->weights_entry.empty()) {
    // A cache file truncated or rewritten under the mapping must fail the request that read it,
    // not kill the process with SIGBUS (memory/mapped_file_guard.h).
    impl->weights_guard = MappedFileGuard::Protect({impl->weights_entry / ModelCache::kDataFile});
  }
  impl->loaded_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  impl->StartWeightsRelease(options.release_weights_after_s, options.release_weights_on_pressure,
                            std::move(pressure));
  if (cache.action() == ModelCache::Action::kBuild) StartCacheBuild(*impl, so, std::move(cache));
  return impl;
}

}  // namespace internal

Model::~Model() = default;

const std::string& Model::id() const { return internal::ImplOf(*this).id; }
const ModelInfo& Model::info() const { return internal::ImplOf(*this).info; }
const ModelOptions& Model::options() const { return internal::ImplOf(*this).options; }
int Model::num_live_generators() const { return internal::ImplOf(*this).live_generators(); }
// InfoJson: src/runtime/stats_json.cpp (the one builder of the document).
uint64_t Model::weights_bytes() const { return internal::ImplOf(*this).weights_bytes; }
WeightsState Model::weights_state() const { return internal::ImplOf(*this).WeightsState(); }

const Tokenizer* Model::tokenizer() const { return internal::ImplOf(*this).tokenizer_owned.get(); }

namespace {

// The template of `m` (the load option's, else the folder's, loaded on first use and kept), or
// null when there is none. Throws what a template that does not parse throws.
const ChatTemplate* FindChatTemplate(const internal::ModelImpl& model) {
  // const_cast: the template is loaded lazily, once, under its mutex; it is immutable after.
  auto& m = const_cast<internal::ModelImpl&>(model);
  std::lock_guard<std::mutex> lock(m.chat_template_mu);
  if (!m.chat_template_owned) {
    try {
      m.chat_template_owned = ChatTemplate::FromModelDir(m.config.dir);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::NotFound) return nullptr;  // none (a later call looks again)
      throw;
    }
  }
  return m.chat_template_owned.get();
}

}  // namespace

bool Model::has_chat_template() const {
  try {
    return FindChatTemplate(internal::ImplOf(*this)) != nullptr;
  } catch (const Error&) {
    return true;  // there is one; it does not parse (chat_template() says why)
  }
}

const ChatTemplate& Model::chat_template() const {
  const internal::ModelImpl& m = internal::ImplOf(*this);
  if (const ChatTemplate* t = FindChatTemplate(m)) return *t;
  throw Error(ErrorCode::InvalidArgument,
              "model '" + internal::EscapeForMessage(m.id, 128) + "' has no chat template (" +
                  internal::EscapeForMessage(m.config.dir.string(), 1024) +
                  " has no chat_template.jinja, tokenizer_config.json \"chat_template\" or "
                  "chat_template.json), so messages cannot be rendered: load it with the option "
                  "chat_template=FILE (a Jinja file, as tokenizer_config.json's; `ebb "
                  "run|chat|generate --chat-template FILE`, the models file's \"chat_template\"), "
                  "or send a plain prompt instead of messages");
}

KvStats Model::kv_stats() const { return internal::ImplOf(*this).kv_pool->Stats(); }

}  // namespace ebb
