#include "bench/naive_embed_loop.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ebb/embedding.h"
#include "ebb/error.h"
#include "model/genai_config.h"
#include "ort/ort_api.h"
#include "ort/ort_env.h"
#include "ort/session_options.h"

namespace ebb::bench {

struct NaiveEmbedWorkload::State {
  internal::GenaiConfig config;
  std::unique_ptr<Ort::Session> session;
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  std::map<std::string, ONNXTensorElementDataType> inputs;  // the graph's inputs and types
  std::string output;                                       // the token vectors' name
  int32_t batch_size = 32;                                  // rows per Run()
  std::vector<std::vector<float>> embeddings;               // the last request's vectors
};

namespace {

// An int32 or int64 [B, L] tensor over `values`, which the caller keeps alive for the Run.
Ort::Value IndexTensor(const Ort::MemoryInfo& mem, ONNXTensorElementDataType type,
                       std::vector<int64_t>& v64, std::vector<int32_t>& v32,
                       const std::vector<int64_t>& dims) {
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    v32.assign(v64.begin(), v64.end());
    return Ort::Value::CreateTensor<int32_t>(mem, v32.data(), v32.size(), dims.data(), dims.size());
  }
  return Ort::Value::CreateTensor<int64_t>(mem, v64.data(), v64.size(), dims.data(), dims.size());
}

}  // namespace

NaiveEmbedWorkload::NaiveEmbedWorkload(std::string name, const BenchOptions& options,
                                       const EmbedDocuments& documents)
    : name_(std::move(name)), options_(options), documents_(documents) {}

NaiveEmbedWorkload::~NaiveEmbedWorkload() = default;

double NaiveEmbedWorkload::Setup() {
  internal::EnsureOrtApi();
#ifdef ORT_API_MANUAL_INIT
  // This translation unit's view of the C++ API (libebb initialises its own at load).
  Ort::InitApi(OrtGetApiBase()->GetApi(ORT_API_VERSION));
#endif
  const auto t0 = std::chrono::steady_clock::now();
  state_ = std::make_unique<State>();
  State& s = *state_;
  s.config = internal::LoadModelFolderConfig(options_.model_dir);
  if (!s.config.is_encoder) {
    throw Error(ErrorCode::InvalidArgument,
                "naive-ort (embed): " + options_.model_dir.string() +
                    " is a decoder model; --scenario embed needs an encoder (embedding) model");
  }
  EmbedRequest probe;  // the same batch size ebb's run uses
  for (const auto& [k, v] : options_.embed_options) probe.Set(k, v);
  s.batch_size = probe.options.batch_size;
  bool has_cpu_arena = false;
  Ort::SessionOptions so = internal::BuildSessionOptions(
      internal::EffectiveSessionOptions(s.config.session_options, options_.model_options),
      s.config.provider_options, options_.model_options, &has_cpu_arena);
  s.session =
      std::make_unique<Ort::Session>(internal::OrtEnvironment(), s.config.model_path.c_str(), so);
  Ort::AllocatorWithDefaultOptions alloc;
  for (size_t i = 0; i < s.session->GetInputCount(); ++i) {
    s.inputs[s.session->GetInputNameAllocated(i, alloc).get()] =
        s.session->GetInputTypeInfo(i).GetTensorTypeAndShapeInfo().GetElementType();
  }
  const auto& io = s.config.encoder_io;
  for (size_t i = 0; i < s.session->GetOutputCount(); ++i) {
    const std::string name = s.session->GetOutputNameAllocated(i, alloc).get();
    if (name == io.last_hidden_state || (name == "token_embeddings" && s.output.empty())) {
      s.output = name;
    }
  }
  if (!s.inputs.count(io.input_ids) || !s.inputs.count(io.attention_mask) || s.output.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "naive-ort (embed): " + s.config.model_path.string() + " needs inputs '" +
                    io.input_ids + "' and '" + io.attention_mask + "' and an output '" +
                    io.last_hidden_state + "' (or token_embeddings); compare against ebb alone");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RequestTiming NaiveEmbedWorkload::RunIteration(int32_t index) {
  State& s = *state_;
  const auto docs = documents_.Rows(index, options_.batch);
  const auto& io = s.config.encoder_io;
  const bool has_types = s.inputs.count(io.token_type_ids) > 0;
  const char* out_name = s.output.c_str();
  Ort::RunOptions run_options;
  for (const auto& [k, v] : options_.model_options.run_options) {
    run_options.AddConfigEntry(k.c_str(), v.c_str());
  }
  RequestTiming timing;
  const auto t0 = std::chrono::steady_clock::now();
  s.embeddings.clear();
  for (size_t start = 0; start < docs.size(); start += static_cast<size_t>(s.batch_size)) {
    const size_t end = std::min(docs.size(), start + static_cast<size_t>(s.batch_size));
    const int64_t B = static_cast<int64_t>(end - start);
    int64_t L = 0;
    for (size_t i = start; i < end; ++i) L = std::max<int64_t>(L, docs[i].size());
    std::vector<int64_t> ids(static_cast<size_t>(B * L), s.config.pad_token_id),
        mask(static_cast<size_t>(B * L), 0), types(static_cast<size_t>(B * L), 0);
    for (int64_t b = 0; b < B; ++b) {
      const auto& row = docs[start + static_cast<size_t>(b)];
      for (size_t t = 0; t < row.size(); ++t) {
        ids[static_cast<size_t>(b * L) + t] = row[t];
        mask[static_cast<size_t>(b * L) + t] = 1;
      }
      timing.prompt_tokens += static_cast<int32_t>(row.size());
    }
    timing.padded_tokens += B * L;
    const std::vector<int64_t> dims{B, L};
    std::vector<int32_t> ids32, mask32, types32;
    std::vector<const char*> names{io.input_ids.c_str(), io.attention_mask.c_str()};
    std::vector<Ort::Value> in;
    in.push_back(IndexTensor(s.cpu, s.inputs[io.input_ids], ids, ids32, dims));
    in.push_back(IndexTensor(s.cpu, s.inputs[io.attention_mask], mask, mask32, dims));
    if (has_types) {
      names.push_back(io.token_type_ids.c_str());
      in.push_back(IndexTensor(s.cpu, s.inputs[io.token_type_ids], types, types32, dims));
    }
    auto out = s.session->Run(run_options, names.data(), in.data(), in.size(), &out_name, 1);
    // Mean over the mask, then L2: sum(h * mask) / sum(mask), as sentence-transformers does.
    const int64_t H = out[0].GetTensorTypeAndShapeInfo().GetShape().back();
    const float* h = out[0].GetTensorData<float>();
    for (int64_t b = 0; b < B; ++b) {
      std::vector<float> v(static_cast<size_t>(H), 0.0f);
      float n = 0;
      for (int64_t t = 0; t < L; ++t) {
        const float m = static_cast<float>(mask[static_cast<size_t>(b * L + t)]);
        n += m;
        const float* x = h + (b * L + t) * H;
        for (int64_t k = 0; k < H; ++k) v[static_cast<size_t>(k)] += x[k] * m;
      }
      double ss = 0;
      for (float& x : v) {
        x /= std::max(n, 1e-9f);
        ss += static_cast<double>(x) * x;
      }
      const float norm = static_cast<float>(std::max(std::sqrt(ss), 1e-12));
      for (float& x : v) x /= norm;
      s.embeddings.push_back(std::move(v));
    }
  }
  timing.e2e_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  timing.ttft_s = timing.e2e_s;
  timing.texts = static_cast<int32_t>(docs.size());
  AtLastToken();  // the vectors are still alive
  return timing;
}

ArenaSample NaiveEmbedWorkload::Arena() const {
  if (!state_ || !state_->session) return {};
  return ReadSessionCpuArena(*state_->session);
}

const std::vector<std::vector<float>>& NaiveEmbedWorkload::last_embeddings() const {
  static const std::vector<std::vector<float>> kNone;
  return state_ ? state_->embeddings : kNone;
}

void NaiveEmbedWorkload::Teardown() { state_.reset(); }

}  // namespace ebb::bench
