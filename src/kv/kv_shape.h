// KvShape — the geometry of a decoder's KV cache: layers, heads, head size, element type and
// layout. Computed once per model at load (ModelImpl::kv_shape, batch 1) from the config and the
// graph's KV inputs; every user (a generator's KvCache, the batched decode rows, the KV figures)
// reads that one value and sets only `batch`. A plain value: copyable, no thread-safety concerns.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstddef>
#include <cstdint>

namespace ebb::internal {

struct KvShape {
  int num_layers = 0;
  int kv_heads = 0;
  int head_size = 0;
  int batch = 1;
  bool combined = false;  // [2, B, H, S, D] per layer instead of K and V tensors
  ONNXTensorElementDataType elem_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  size_t elem_bytes = 4;

  // Bytes of one token of one sequence, all layers, K and V.
  uint64_t BytesPerToken() const { return 2ull * num_layers * kv_heads * head_size * elem_bytes; }
};

}  // namespace ebb::internal
