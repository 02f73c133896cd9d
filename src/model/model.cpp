#include "ebb/model.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <set>

#include "core/files.h"
#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "memory/file_pages.h"
#include "memory/heap_trim.h"
#include "memory/memory_governor.h"
#include "model/model_impl.h"
#include "model/model_info.h"
#include "ort/arena_stats.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
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

// Resolves the config's names against the graph; every problem names the file and the tensor.
// Maps ORT's session-creation failure to what is wrong: a refused option, threads that could
// not start, a missing external-data file, or (only when ORT says so) a file that is not ONNX.
Error SessionCreateError(const GenaiConfig& cfg, const ModelOptions& options,
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
  const std::string refused = FindRefusedSessionOption(cfg, options);
  if (!refused.empty()) {
    return Error(ErrorCode::InvalidArgument, where + refused + "; fix or remove that option");
  }
  if (ort_message.find("Protobuf parsing failed") != std::string::npos ||
      ort_message.find("INVALID_PROTOBUF") != std::string::npos) {
    return Error(ErrorCode::InvalidArgument,
                 where + "not a valid ONNX file (" + msg + "); it may be corrupt or truncated");
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

// One tiny Run() on an idle model, so that a pending arena shrink happens now (ORT shrinks only
// at the end of a Run()). It is not a request: the policies do not see it.
void RunMinimalStep(Model& model) {
  GeneratorParams p;
  p.max_length = 1;
  p.kv_mode = KvMode::kStatic;
  Generator g(model.shared_from_this(), p);
  SetInternalRequest(g, true);
  g.AppendTokens(std::vector<int32_t>{model.info().pad_token_id});
}

}  // namespace

}  // namespace internal

Model::Model(std::unique_ptr<internal::ModelImpl> impl) : impl_(std::move(impl)) {}
Model::~Model() {
  if (impl_->registered) internal::MemoryGovernor::Get().AddModel(-1);
  // Unload: the session (and an arena it alone uses) and the KV pool go with impl_; then give
  // the freed heap back to the OS.
  impl_.reset();
  internal::TrimHeap();
}

const ModelInfo& Model::info() const { return impl_->info; }
const ModelOptions& Model::options() const { return impl_->options; }

KvStats Model::kv_stats() const {
  const auto s = impl_->kv_pool->Stats();
  KvStats k;
  k.in_use_bytes = s.in_use_bytes;
  k.reserved_bytes = s.reserved_bytes;
  k.peak_in_use_bytes = s.peak_in_use_bytes;
  k.max_bytes = s.max_bytes;
  k.retain_limit_bytes = s.retain_limit_bytes;
  k.num_allocations = s.num_allocations;
  k.num_refusals = s.num_refusals;
  return k;
}

std::shared_ptr<Model> Model::Load(const std::filesystem::path& dir, const ModelOptions& options) {
  using namespace internal;
  EnsureOrtApi();
  auto impl = std::make_unique<ModelImpl>();
  impl->config = LoadGenaiConfig(dir);
  impl->options = options;
  const GenaiConfig& cfg = impl->config;
  if (cfg.is_encoder) {
    throw Error(ErrorCode::InvalidArgument,
                cfg.config_path.string() + ": /model/type: '" + cfg.model_type +
                    "' is an encoder (embedding) model; Model::Load is for decoders");
  }

  ArenaConfig arena_cfg;
  Ort::SessionOptions so = BuildSessionOptions(cfg, options, &impl->has_cpu_arena, &arena_cfg);
  if (!arena_cfg.empty()) {
    impl->env_arena = AcquireEnvArena(arena_cfg);  // may throw; nothing else is held yet
    if (auto it = arena_cfg.find("max_mem"); it != arena_cfg.end())
      impl->arena_max_mem = it->second;
  }
  // A FIFO would block ORT's read forever, an unreadable file would read as "corrupt".
  CheckRegularFile(cfg.model_path, "the model's ONNX file");
  try {
    impl->session = std::make_unique<Ort::Session>(OrtEnvironment(), cfg.model_path.c_str(), so);
  } catch (const Ort::Exception& e) {
    throw SessionCreateError(cfg, options, e.what());
  }
  impl->io = ResolveIo(cfg, *impl->session);
  impl->cpu_memory = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  if (impl->arena_max_mem > 0) {
    // ORT reserves the weights in the arena without checking the cap; once the arena holds more
    // than max_mem, ORT computes the room left as limit - allocated in unsigned arithmetic and
    // enforces no cap at all (measured: max_mem=8MiB let a step take 76 MiB). Refuse that.
    const ArenaStats a = ReadCpuArenaStats(*impl->session, impl->cpu_memory);
    if (a.available && a.total_allocated_bytes > static_cast<int64_t>(impl->arena_max_mem)) {
      throw Error(ErrorCode::InvalidArgument,
                  "arena.max_mem=" + std::to_string(impl->arena_max_mem) + " (" +
                      FormatBytes(impl->arena_max_mem) + ") is below the " +
                      FormatBytes(static_cast<uint64_t>(a.total_allocated_bytes)) +
                      " the model's weights already take in the arena, and ONNX Runtime then "
                      "enforces no cap at all: raise arena.max_mem above that, or keep the "
                      "weights out of the arena with "
                      "session.use_device_allocator_for_initializers=1");
    }
  }
  impl->kv_pool = std::make_unique<KvPool>(options.kv_max_bytes, options.kv_retain_bytes);
  // The runtime-wide budget (memory.limit) sees every KV allocation of every model.
  impl->kv_pool->set_admit_fn([](uint64_t b) { MemoryGovernor::Get().Admit(b); },
                              [](uint64_t b) { MemoryGovernor::Get().Release(b); });
  if (options.memory_limit_bytes > 0) MemoryGovernor::Get().set_limit(options.memory_limit_bytes);
  MemoryGovernor::Get().AddModel(1);
  impl->registered = true;

  ModelInfo& info = impl->info;
  info.path = cfg.dir;
  info.type = cfg.model_type;
  info.vocab_size = cfg.vocab_size;
  info.context_length = cfg.context_length;
  info.num_layers = cfg.num_hidden_layers;
  info.num_kv_heads = cfg.num_key_value_heads;
  info.head_size = cfg.head_size;
  info.past_present_share_buffer = cfg.search.past_present_share_buffer && !impl->io.combined_kv;
  info.eos_token_ids = cfg.eos_token_ids;
  info.pad_token_id = cfg.pad_token_id >= 0
                          ? cfg.pad_token_id
                          : (cfg.eos_token_ids.empty() ? 0 : cfg.eos_token_ids[0]);
  info.bos_token_id = cfg.bos_token_id;
  const size_t elem = impl->io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  info.kv_bytes_per_token =
      2ull * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_size * elem;
  EBB_LOG_INFO("loaded {} ({}, {} layers, kv {} B/token, kv_cache.mode={})", cfg.dir.string(),
               cfg.model_type, cfg.num_hidden_layers, info.kv_bytes_per_token,
               KvModeName(options.kv_mode));
  auto model = std::shared_ptr<Model>(new Model(std::move(impl)));
  ModelImpl& mi = *model->impl_;
  Model* raw = model.get();  // the controller lives inside the model: no ownership cycle
  mi.shrink = std::make_unique<ShrinkController>(
      mi.has_cpu_arena, [raw] { internal::RunMinimalStep(*raw); },
      [&mi] {
        mi.kv_pool->Trim();
        TrimHeap();
      });
  // Run options: the config's, then the user's. genai_config.json's empty
  // "memory.enable_memory_arena_shrinkage" names no device and is dropped; shrinking is ebb's.
  for (const auto& [k, v] : cfg.run_options) {
    if (!v.empty()) mi.shrink->SetRunOption(k, v);
  }
  for (const auto& [k, v] : options.run_options) mi.shrink->SetRunOption(k, v);
  if (options.shrink_every > 0) mi.shrink->ShrinkEvery(options.shrink_every);
  if (options.shrink_above_bytes > 0) mi.shrink->ShrinkAbove(options.shrink_above_bytes);
  // Parsing and optimising the graph leaves freed heap behind (about the size of the model
  // file's protobuf); glibc keeps it resident unless asked.
  TrimHeap();
  // ORT copied or prepacked what it needs out of the mapped external-data file; the file pages
  // it touched doing so would otherwise stay in RSS (file_pages.h).
  if (options.release_file_pages) {
    const FilePagesRelease r = ReleaseFilePages(cfg.dir);
    if (r.before.resident_bytes > 0) {
      EBB_LOG_INFO("released {} of resident model-file pages ({} mappings; {} still resident)",
                   FormatBytes(r.before.resident_bytes -
                               std::min(r.before.resident_bytes, r.after.resident_bytes)),
                   r.before.num_mappings, FormatBytes(r.after.resident_bytes));
    }
  }
  return model;
}

MemoryStats Model::memory_stats() const {
  MemoryStats s;
  s.process = ReadProcessMemory();
  const KvStats k = kv_stats();
  s.kv = {k.in_use_bytes, k.reserved_bytes, k.peak_in_use_bytes, k.max_bytes};
  if (impl_->has_cpu_arena) {
    s.cpu_arena = internal::ReadCpuArenaStats(*impl_->session, impl_->cpu_memory);
  }
  s.num_shrinks = impl_->shrink->num_shrinks();
  s.num_requests = impl_->shrink->num_requests();
  return s;
}

}  // namespace ebb
