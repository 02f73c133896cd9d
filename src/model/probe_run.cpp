#include "model/probe_run.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "ebb/error.h"

namespace ebb::internal {
namespace {

constexpr int64_t kProbeTokens = 8;

// An int32 or int64 tensor holding `values`, owned by `allocator`.
Ort::Value IntTensor(OrtAllocator* allocator, const std::vector<int64_t>& values,
                     const std::vector<int64_t>& dims, ONNXTensorElementDataType type) {
  Ort::Value v = Ort::Value::CreateTensor(allocator, dims.data(), dims.size(), type);
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    auto* p = v.GetTensorMutableData<int32_t>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<int32_t>(values[i]);
  } else {
    auto* p = v.GetTensorMutableData<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  }
  return v;
}

std::vector<float> AsFloats(const Ort::Value& v) {
  const auto info = v.GetTensorTypeAndShapeInfo();
  const size_t n = info.GetElementCount();
  std::vector<float> out(n);
  if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
    const auto* p = v.GetTensorData<Ort::Float16_t>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i].ToFloat();
  } else if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    const auto* p = v.GetTensorData<float>();
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    throw Error(ErrorCode::Internal, "probe: the output is neither float32 nor float16");
  }
  return out;
}

}  // namespace

std::vector<float> ProbeOutputs(Ort::Session& session, const GenaiConfig& cfg, const DecoderIo& io,
                                const EncoderIo& encoder, bool shared_kv) {
  Ort::AllocatorWithDefaultOptions allocator;
  const int64_t vocab = std::max<int32_t>(cfg.vocab_size, 1);
  std::vector<int64_t> ids, ones(kProbeTokens, 1), zeros(kProbeTokens, 0), positions;
  for (int64_t i = 0; i < kProbeTokens; ++i) {
    ids.push_back((i * 7919 + 3) % vocab);
    positions.push_back(i);
  }
  const std::vector<int64_t> dims{1, kProbeTokens};
  std::vector<std::string> names;
  std::vector<Ort::Value> values;
  auto feed = [&](const std::string& name, Ort::Value v) {
    names.push_back(name);
    values.push_back(std::move(v));
  };
  std::string output;
  if (cfg.is_encoder) {
    feed(encoder.input_ids, IntTensor(allocator, ids, dims, encoder.input_ids_type));
    if (!encoder.attention_mask.empty()) {
      feed(encoder.attention_mask, IntTensor(allocator, ones, dims, encoder.attention_mask_type));
    }
    if (!encoder.token_type_ids.empty()) {
      feed(encoder.token_type_ids, IntTensor(allocator, zeros, dims, encoder.token_type_ids_type));
    }
    output = encoder.last_hidden_state.empty() ? encoder.pooled : encoder.last_hidden_state;
  } else {
    feed(io.input_ids, IntTensor(allocator, ids, dims, io.input_ids_type));
    if (!io.attention_mask.empty()) {
      feed(io.attention_mask, IntTensor(allocator, ones, dims, io.attention_mask_type));
    }
    if (!io.position_ids.empty()) {
      feed(io.position_ids, IntTensor(allocator, positions, dims, io.position_ids_type));
    }
    shared_kv = shared_kv && !io.combined_kv && io.present_names.size() == io.past_names.size();
    const int64_t past_len = shared_kv ? kProbeTokens : 0;
    const std::vector<int64_t> kv_dims =
        io.combined_kv
            ? std::vector<int64_t>{2, 1, cfg.num_key_value_heads, past_len, cfg.head_size}
            : std::vector<int64_t>{1, cfg.num_key_value_heads, past_len, cfg.head_size};
    for (const auto& past : io.past_names) {
      Ort::Value v =
          Ort::Value::CreateTensor(allocator, kv_dims.data(), kv_dims.size(), io.kv_type);
      if (shared_kv) {
        const size_t elem = io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
        std::memset(v.GetTensorMutableRawData(), 0,
                    v.GetTensorTypeAndShapeInfo().GetElementCount() * elem);
      }
      feed(past, std::move(v));
    }
    if (!io.logits_index.empty()) {
      feed(io.logits_index,
           IntTensor(allocator, {kProbeTokens - 1}, {1}, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64));
    }
    output = io.logits;
  }
  if (output.empty()) throw Error(ErrorCode::Internal, "probe: the model has no output to compare");
  std::vector<const char*> in_names;
  for (const auto& n : names) in_names.push_back(n.c_str());
  // Outputs: the one compared (ORT allocates it), and with a shared KV buffer the presents bound
  // over the pasts' memory, as the generator binds them.
  std::vector<const char*> out_names{output.c_str()};
  std::vector<Ort::Value> outs;
  outs.emplace_back(nullptr);
  if (!cfg.is_encoder && shared_kv) {
    const Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    const size_t first_past =
        values.size() - io.past_names.size() - (io.logits_index.empty() ? 0 : 1);
    for (size_t i = 0; i < io.present_names.size(); ++i) {
      Ort::Value& past = values[first_past + i];
      const auto info = past.GetTensorTypeAndShapeInfo();
      const std::vector<int64_t> shape = info.GetShape();
      const size_t elem = io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
      out_names.push_back(io.present_names[i].c_str());
      outs.push_back(Ort::Value::CreateTensor(mem, past.GetTensorMutableRawData(),
                                              info.GetElementCount() * elem, shape.data(),
                                              shape.size(), io.kv_type));
    }
  }
  Ort::RunOptions ro;
  session.Run(ro, in_names.data(), values.data(), values.size(), out_names.data(), outs.data(),
              outs.size());
  return AsFloats(outs.at(0));
}

std::string CompareProbeOutputs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) {
    return "the outputs have " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
           " elements";
  }
  if (a.empty()) return "the outputs are empty";
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      return "element " + std::to_string(i) + " is not finite (" + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]) + ")";
    }
    if (std::fabs(a[i] - b[i]) > 1e-5f * (1.0f + std::fabs(a[i]))) {
      return "element " + std::to_string(i) + " differs: " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]);
    }
  }
  return "";
}

}  // namespace ebb::internal
