// Which kernels a model's heavy operators run on, as one line for people (issue 28: "make the
// kernel choice visible in `ebb info` and the stats").
//
// Why per model: the process-wide line (ebb::CpuKernels(), "MLAS int4 MatMulNBits: AVX512VNNI")
// says what MLAS would pick on this CPU, not what a model runs. An fp32 model (stories260k) has no
// MatMulNBits at all, and a folder rewritten for a custom op (session_options.custom_ops_library,
// e.g. bench/llamacpp's ebb.ggml.MatMulQ4_0) runs its matmuls in that library, not in MLAS.
// The line is derived from the graph's operators (graph_ops.h) and the CPU's flags, the way MLAS
// and ORT dispatch on them; ORT does not report the kernels it picked.
// Thread-safety: a pure function.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/graph_ops.h"

namespace ebb::internal {

// One "; "-separated group per operator family the graph uses, in this order:
//   "MatMulNBits x85: MLAS AVX512VNNI"          com.microsoft MatMulNBits (int4 weights)
//   "MatMul x7: MLAS GEMM"                      ONNX MatMul / Gemm, com.microsoft FusedMatMul
//   "GroupQueryAttention x12: ORT CPU"          attention ops (GroupQueryAttention,
//                                               MultiHeadAttention, Attention, SparseAttention)
//   "ebb.ggml.MatMulQ4_0 x85: custom op (libebb_ggml_matmul.so)"  any op outside ONNX's and
//                                               ORT's domains, with the library's file name
// then, when the CPU has AMX and the graph has MatMulNBits, "(CPU has AMX; MLAS uses it for
// 8-bit QGEMM only)". On a GPU provider (`gpu_provider`, e.g. "cuda"; empty: CPU) the kernels
// are that provider's: "cuda: MatMulNBits x85, GroupQueryAttention x12". A graph with none of
// these families: "ORT CPU" (or the provider's name).
// `cpu_flags`: CpuFlags(); `custom_ops_library`: the path session_options names, or empty.
// `builtin_cpu_ops`: the cpu_ops setting (e.g. "auto") when the session registered libebb's own
// ebb.cpu kernels (cpu_ops_rewrite.h), else empty; their nodes are then one group of their own,
// each with the instruction set its kernel runs on this CPU (AVX-512 VNNI, AVX-512 or AVX2):
//   "ebb.cpu.GroupQueryAttention x12 (AVX-512), ebb.cpu.MatMulNBits x84 (AVX-512 VNNI): ebb
//   (built in, cpu_ops=auto)"
std::string DescribeModelKernels(const std::map<OpId, int>& ops,
                                 const std::set<std::string>& cpu_flags,
                                 const std::string& custom_ops_library,
                                 const std::string& gpu_provider,
                                 const std::string& builtin_cpu_ops = "");

}  // namespace ebb::internal
