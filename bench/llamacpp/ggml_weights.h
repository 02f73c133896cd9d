// bench/llamacpp/ggml_weights.h — where ggml keeps a weight matrix, chosen as llama.cpp's loader
// chooses it. Shared by matmul_probe (ggml called directly) and libebb_ggml_matmul.so (ggml
// inside ORT), so both time the same buffer type for the same matrix.
#pragma once

#include <vector>

#include "ggml-backend.h"
#include "ggml.h"

namespace ggml_weights {

// The buffer types to try for weights, in llama.cpp's order: the device's extra types first
// (AMX, CPU_REPACK on the CPU backend), then its default buffer type.
inline std::vector<ggml_backend_buffer_type_t> Candidates(ggml_backend_reg_t reg,
                                                          ggml_backend_dev_t dev) {
  std::vector<ggml_backend_buffer_type_t> out;
  auto get_extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
  if (get_extra) {
    for (ggml_backend_buffer_type_t* b = get_extra(dev); b && *b; ++b) out.push_back(*b);
  }
  out.push_back(ggml_backend_dev_buffer_type(dev));
  return out;
}

// Whether the device runs W x A (A float [k, 512]) with `w` in the buffer it was allocated in:
// llama.cpp's test before it keeps a weight in a buffer type.
inline bool MultipliesFrom(ggml_backend_dev_t dev, ggml_tensor* w, long k) {
  ggml_init_params ip = {ggml_tensor_overhead() * 4, nullptr, true};
  ggml_context* ctx = ggml_init(ip);
  ggml_tensor* y = ggml_mul_mat(ctx, w, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, 512));
  const bool ok = ggml_backend_dev_supports_op(dev, y);
  ggml_free(ctx);
  return ok;
}

}  // namespace ggml_weights
