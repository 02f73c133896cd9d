// IndexTensor: an integer graph input (input_ids, attention_mask, position_ids, token_type_ids)
// held as int64 or int32, whichever the graph declares, so callers fill int64 values and bind a
// view without caring. One definition for the generator, the batched decode steps and the
// embedder. Not thread-safe: one owner fills and binds it; the view borrows its buffer, which
// must outlive the Run().
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ebb::internal {

struct IndexTensor {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;

  bool is_int64() const { return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64; }
  // Replaces the contents with `v`.
  void Assign(const std::vector<int64_t>& v) {
    if (is_int64()) {
      i64 = v;
    } else {
      i32.assign(v.begin(), v.end());
    }
  }
  // `n` zeros, to be set with Put.
  void Fill(size_t n) {
    i64.assign(is_int64() ? n : 0, 0);
    i32.assign(is_int64() ? 0 : n, 0);
  }
  void Put(size_t at, int64_t v) {
    if (is_int64()) {
      i64[at] = v;
    } else {
      i32[at] = static_cast<int32_t>(v);
    }
  }
  Ort::Value View(const Ort::MemoryInfo& mem, const std::vector<int64_t>& dims) {
    if (is_int64()) {
      return Ort::Value::CreateTensor<int64_t>(mem, i64.data(), i64.size(), dims.data(),
                                               dims.size());
    }
    return Ort::Value::CreateTensor<int32_t>(mem, i32.data(), i32.size(), dims.data(), dims.size());
  }
};

}  // namespace ebb::internal
