#include "bench/naive_ort_loop.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "ebb/error.h"
#include "model/genai_config.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
#include "ort/session_options.h"

namespace ebb::bench {

struct NaiveOrtWorkload::State {
  internal::GenaiConfig config;
  std::unique_ptr<Ort::Session> session;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  std::set<std::string> inputs;  // the graph's input names
  ONNXTensorElementDataType ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType mask_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType pos_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType kv_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  bool combined = false;  // gpt2-style past_%d
  bool has_position_ids = false;
  std::vector<std::string> past_names_s, out_names_s;
  std::vector<Ort::Value> past;  // the presents of the last step, fed back as past
  uint64_t past_bytes = 0;
};

namespace {

ONNXTensorElementDataType InputType(Ort::Session& s, const std::string& name) {
  const size_t n = s.GetInputCount();
  Ort::AllocatorWithDefaultOptions alloc;
  for (size_t i = 0; i < n; ++i) {
    if (s.GetInputNameAllocated(i, alloc).get() == name) {
      return s.GetInputTypeInfo(i).GetTensorTypeAndShapeInfo().GetElementType();
    }
  }
  throw Error(ErrorCode::InvalidArgument,
              "naive-ort: the model has no input '" + name + "' named in genai_config.json");
}

// An int32 or int64 tensor that owns its data (the vector lives in `keep`).
Ort::Value IntTensor(const Ort::MemoryInfo& mem, ONNXTensorElementDataType type,
                     const std::vector<int64_t>& values, const std::vector<int64_t>& dims,
                     std::vector<std::vector<int64_t>>& keep64,
                     std::vector<std::vector<int32_t>>& keep32) {
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    keep32.emplace_back(values.begin(), values.end());
    auto& v = keep32.back();
    return Ort::Value::CreateTensor<int32_t>(mem, v.data(), v.size(), dims.data(), dims.size());
  }
  keep64.push_back(values);
  auto& v = keep64.back();
  return Ort::Value::CreateTensor<int64_t>(mem, v.data(), v.size(), dims.data(), dims.size());
}

float LogitAt(const Ort::Value& logits, size_t i) {
  const auto type = logits.GetTensorTypeAndShapeInfo().GetElementType();
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
    return logits.GetTensorData<Ort::Float16_t>()[i].ToFloat();
  }
  return logits.GetTensorData<float>()[i];
}

}  // namespace

NaiveOrtWorkload::NaiveOrtWorkload(std::string name, const BenchOptions& options,
                                   const PromptSet& prompts)
    : name_(std::move(name)), options_(options), prompts_(prompts) {}

NaiveOrtWorkload::~NaiveOrtWorkload() = default;

double NaiveOrtWorkload::Setup() {
  internal::EnsureOrtApi();
#ifdef ORT_API_MANUAL_INIT
  // This translation unit's view of the C++ API (libebb initialises its own at load).
  Ort::InitApi(OrtGetApiBase()->GetApi(ORT_API_VERSION));
#endif
  const auto t0 = std::chrono::steady_clock::now();
  state_ = std::make_unique<State>();
  State& s = *state_;
  s.config = internal::LoadGenaiConfig(options_.model_dir);
  if (s.config.is_encoder) {
    throw Error(ErrorCode::InvalidArgument, "naive-ort: " + options_.model_dir.string() +
                                                " is an encoder model; bench "
                                                "needs a decoder");
  }
  bool has_cpu_arena = false;
  Ort::SessionOptions so = internal::BuildSessionOptions(
      internal::EffectiveSessionOptions(s.config.session_options, options_.model_options),
      s.config.provider_options, options_.model_options, &has_cpu_arena);
  s.session =
      std::make_unique<Ort::Session>(internal::OrtEnvironment(), s.config.model_path.c_str(), so);
  Ort::AllocatorWithDefaultOptions alloc;
  for (size_t i = 0; i < s.session->GetInputCount(); ++i) {
    s.inputs.insert(s.session->GetInputNameAllocated(i, alloc).get());
  }
  const auto& io = s.config.io;
  s.ids_type = InputType(*s.session, io.input_ids);
  s.mask_type = InputType(*s.session, io.attention_mask);
  s.has_position_ids = !io.position_ids.empty() && s.inputs.count(io.position_ids) > 0;
  if (s.has_position_ids) s.pos_type = InputType(*s.session, io.position_ids);
  s.combined = !io.past_combined.empty();
  s.out_names_s.push_back(io.logits);
  for (int l = 0; l < s.config.num_hidden_layers; ++l) {
    if (s.combined) {
      s.past_names_s.push_back(internal::LayerName(io.past_combined, l));
      s.out_names_s.push_back(internal::LayerName(io.present_combined, l));
    } else {
      s.past_names_s.push_back(internal::LayerName(io.past_key, l));
      s.past_names_s.push_back(internal::LayerName(io.past_value, l));
      s.out_names_s.push_back(internal::LayerName(io.present_key, l));
      s.out_names_s.push_back(internal::LayerName(io.present_value, l));
    }
  }
  s.kv_type = InputType(*s.session, s.past_names_s.at(0));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RequestTiming NaiveOrtWorkload::RunIteration(int32_t index) {
  State& s = *state_;
  const auto rows = prompts_.Rows(index, options_.batch, PromptKindOf(options_.scenario));
  const int64_t batch = static_cast<int64_t>(rows.size());
  const int64_t vocab = s.config.vocab_size;
  const auto& io = s.config.io;
  std::vector<const char*> out_names;
  for (const auto& n : s.out_names_s) out_names.push_back(n.c_str());

  int64_t len = 0;  // tokens in the past
  std::vector<std::vector<int64_t>> step_tokens(batch);
  for (int64_t b = 0; b < batch; ++b) step_tokens[b].assign(rows[b].begin(), rows[b].end());
  std::vector<bool> finished(static_cast<size_t>(batch), false);
  Ort::AllocatorWithDefaultOptions alloc;
  Ort::RunOptions run_options;
  for (const auto& [k, v] : options_.model_options.run_options) {
    run_options.AddConfigEntry(k.c_str(), v.c_str());
  }

  TokenClock clock;
  clock.Start();
  s.past.clear();
  while (clock.tokens() < options_.gen_tokens) {
    const int64_t S = static_cast<int64_t>(step_tokens[0].size());
    std::vector<std::vector<int64_t>> keep64;
    std::vector<std::vector<int32_t>> keep32;
    keep64.reserve(4);
    keep32.reserve(4);
    std::vector<int64_t> ids, mask(static_cast<size_t>(batch * (len + S)), 1), pos;
    for (int64_t b = 0; b < batch; ++b) {
      ids.insert(ids.end(), step_tokens[b].begin(), step_tokens[b].end());
      for (int64_t i = 0; i < S; ++i) pos.push_back(len + i);
    }
    std::vector<std::string> in_names_s{io.input_ids, io.attention_mask};
    std::vector<Ort::Value> in;
    in.push_back(IntTensor(s.cpu, s.ids_type, ids, {batch, S}, keep64, keep32));
    in.push_back(IntTensor(s.cpu, s.mask_type, mask, {batch, len + S}, keep64, keep32));
    if (s.has_position_ids) {
      in_names_s.push_back(io.position_ids);
      in.push_back(IntTensor(s.cpu, s.pos_type, pos, {batch, S}, keep64, keep32));
    }
    if (s.past.empty()) {
      const std::vector<int64_t> dims =
          s.combined
              ? std::vector<int64_t>{2, batch, s.config.num_key_value_heads, 0, s.config.head_size}
              : std::vector<int64_t>{batch, s.config.num_key_value_heads, 0, s.config.head_size};
      for (size_t i = 0; i < s.past_names_s.size(); ++i) {
        s.past.push_back(Ort::Value::CreateTensor(alloc, dims.data(), dims.size(), s.kv_type));
      }
    }
    for (auto& v : s.past) in.push_back(std::move(v));
    for (const auto& n : s.past_names_s) in_names_s.push_back(n);
    std::vector<const char*> in_names;
    for (const auto& n : in_names_s) in_names.push_back(n.c_str());

    auto out = s.session->Run(run_options, in_names.data(), in.data(), in.size(), out_names.data(),
                              out_names.size());
    s.past.clear();
    s.past_bytes = 0;
    for (size_t i = 1; i < out.size(); ++i) {
      const auto info = out[i].GetTensorTypeAndShapeInfo();
      const size_t elem = s.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
      s.past_bytes += info.GetElementCount() * elem;
      s.past.push_back(std::move(out[i]));
    }
    len += S;
    // Greedy: argmax of each row's last position.
    const size_t logits_s = out[0].GetTensorTypeAndShapeInfo().GetShape()[1];
    bool all_done = true;
    for (int64_t b = 0; b < batch; ++b) {
      const size_t base = (static_cast<size_t>(b) * logits_s + logits_s - 1) * vocab;
      int64_t best = 0;
      float best_v = LogitAt(out[0], base);
      for (int64_t v = 1; v < vocab; ++v) {
        const float x = LogitAt(out[0], base + v);
        if (x > best_v) {
          best_v = x;
          best = v;
        }
      }
      const auto& eos = s.config.eos_token_ids;
      if (std::find(eos.begin(), eos.end(), static_cast<int32_t>(best)) != eos.end()) {
        finished[b] = true;
      }
      all_done = all_done && finished[b];
      step_tokens[b].assign(1, best);
    }
    clock.Token();
    AtToken(clock.tokens());
    if (all_done) break;
  }
  AtLastToken();
  s.past.clear();  // the request is over: its KV goes back to ORT's arena
  s.past_bytes = 0;
  return clock.Finish(static_cast<int32_t>(rows[0].size()));
}

KvSample NaiveOrtWorkload::Kv() const {
  KvSample k;
  k.in_use_bytes = state_ ? state_->past_bytes : 0;
  return k;
}

ArenaSample NaiveOrtWorkload::Arena() const {
  if (!state_ || !state_->session) return {};
  return ReadSessionCpuArena(*state_->session);
}

void NaiveOrtWorkload::Teardown() { state_.reset(); }

}  // namespace ebb::bench
