// src/cpu_ops/gqa_op.h — ebb.cpu.GroupQueryAttention, an ONNX Runtime custom op of
// libebb_cpu_ops.so (registered by cpu_ops.cpp; docs/cpu_ops.md).
//
// Op: type GroupQueryAttention (opset 1), CPU execution provider, the inputs, outputs and
// attributes of com.microsoft GroupQueryAttention (a model is rewritten by changing the node's
// domain only: tools/cpu_ops_model.py):
//   inputs   0 query        float [B, S, H * D], or packed [B, S, (H + 2 Hkv) * D] when key and
//                           value are absent (Q, then K, then V per token)
//            1 key, 2 value float [B, S, Hkv * D], optional (absent: packed query)
//            3 past_key, 4 past_value  float or float16 [B, Hkv, P, D] (BNSH): the KV cache, in
//                           the type the graph declares (tools/cpu_ops_model.py --kv-fp16 declares
//                           float16: half the bytes a decode step streams; ORT's kernel needs the
//                           query's type there)
//            5 seqlens_k    int32 [B]: per batch row, its total length (past + new) minus 1
//            6 total_sequence_length   int32 [1]: the largest total length
//            7 cos_cache, 8 sin_cache  float [max positions, R / 2], optional (do_rotary)
//   attrs    num_heads H, kv_num_heads Hkv, scale (0: 1 / sqrt(D)), softcap (0: none),
//            local_window_size (-1: none), do_rotary (0/1), rotary_interleaved (0/1),
//            smooth_softmax (0/1)
//   outputs  0 output float [B, S, H * D]; 1 present_key, 2 present_value [B, Hkv, P', D] in
//            past's type, with P' = max(P, total_sequence_length)
// Nodes with position_ids, attention_bias or head_sink inputs (9 and on) are left to ORT by the
// rewrite.
//
// Semantics (ORT 1.30's CPU kernel, onnxruntime/contrib_ops/cpu/bert/gqa_attention_base.h and
// MLAS's flashattn_gqa.cpp; checked against it op by op, tests/integration/cpu_ops_test.cpp):
//   - the first prompt is S > 1 with S == total_sequence_length: every row's past length is 0;
//     otherwise row b's past length is seqlens_k[b] + 1 - S (a later prompt chunk, or decode);
//   - token s of row b sits at position past_b + s: rotary (when do_rotary) rotates its query and
//     key there with cos/sin_cache[past_b + s] over the first R = 2 * cos_cache.dim(1) elements
//     of each head (half-split: x1 = x[0, R/2), x2 = x[R/2, R); interleaved: pairs (x[2i],
//     x[2i+1]));
//   - its key and value (rounded to fp16 for an fp16 cache) are written to present at [b, head,
//     past_b + s]; when present is not past's own buffer (ebb binds both to one buffer, so it is
//     in a GQA graph), past's rows [0, past_b) are copied first (other rows are left as they are;
//     ORT zeroes them);
//   - query s of head h attends keys [0, min(past_b + s + 1, seqlens_k[b] + 1)) of its group's
//     kv head h / (H / Hkv) (a padded query of a first prompt sees its row's valid keys; with
//     local_window_size W >= 0: only the last W of them), with scores q.k * scale, softcap c
//     applied as c * tanh(score / c), and softmax (smooth_softmax: max(0, scores) subtracted
//     and an extra e^-max in the denominator, as if a zero score were added).
//
// Kernel: the new rows are appended per (b, kv head), then one task per (b, kv head, block of 16
// queries) rotates and scales its queries, reads each visible key row once for up to 4 of the
// group's query heads (H / Hkv of them; the accumulators in registers), exponentiates the scores
// with a vectorised exp (relative error ~2e-7), and reads each value row once for the same
// heads. D: 16, 32, 48, 64, 96 or 128. Both steps run on ORT's intra-op pool
// (KernelContext_ParallelFor). Measured within 5e-7 (relative to the largest |output|) of ORT's
// kernel.
//
// CPU: the vector parts (gqa_kernels.h) come in an AVX-512 F/BW/VL set and an AVX2 + FMA + F16C
// set, picked when a kernel is created (EBB_CPU_OPS_ISA=avx2 forces the second); kernel creation
// fails with a clear error on a CPU with neither.
#pragma once

#include "onnxruntime_c_api.h"

namespace ebb_cpu_ops {

// The op (an object that lives to process exit; ORT keeps pointers to it).
const OrtCustomOp* GqaOp();

}  // namespace ebb_cpu_ops
