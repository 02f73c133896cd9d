// src/cpu_ops/int4_rows_op.h — ebb.cpu.MatMulNBits, an ONNX Runtime custom op of libebb_cpu_ops.so
// (registered by cpu_ops.cpp; docs/cpu_ops.md).
//
// Op: type MatMulNBits (opset 1), CPU execution provider. The inputs and attributes are
// com.microsoft MatMulNBits' own, so a model is rewritten by changing the node's domain only
// (tools/cpu_ops_model.py).
//   inputs   A            float [..., K]
//            B            uint8 [N, K / block_size, block_size / 2]: per column, per block, two
//                         codes per byte (element 2i in the low nibble of byte i, 2i+1 in the
//                         high); a constant initializer
//            scales       float [N * K / block_size], a constant initializer
//            zero_points  uint8 [N * ceil(K / block_size / 2)], optional, a constant initializer:
//                         two 4-bit zero points per byte (low nibble first); 8 when absent
//   attrs    K, N, bits (4), block_size (a power of two from 32)
//   output   Y  float [..., N] = A dequant(B)^T
// g_idx and bias (MatMulNBits' inputs 4 and 5) are not supported: the rewrite leaves such nodes.
//
// Arithmetic (as MLAS's CompInt8, accuracy_level 4): every row of A is quantized to int8 per block
// (scale = max|a| / 127 over the block, round to nearest even; kept per unit of min(block_size,
// 128) elements), and
//   Y[m, n] = sum over units u of  sb[n, u] * sa[m, u] * (sum_k qw[n, k] qa[m, k] - zp[n, u] sum_k
//   qa[m, k])
// with qw in 0..15; measured within 6e-7 (relative to the largest |Y|) of MLAS's output, zero
// points and blocks of 32 to 256 included (tests/integration/cpu_ops/matmul_check.cpp).
//
// Layout: kernel creation repacks B for 16-column vectors (Packed below): one 64-byte load holds
// 8 k of 16 columns (lane L = column L, 4 k in its low nibbles and the next 4 in its high ones), so
// each row's 4 int8 of A, broadcast, feed one vpdpbusd per 16 columns and 4 k, and the result is
// 16 columns' sums, stored as they are (no horizontal reduction). The copy is the op's own
// anonymous memory, the size of B (the trade ggml's repack makes too), except where the session
// names a pack folder (pack_file.h): ebb's compiled-model cache has its build write the layout
// into the entry, and every later load maps it from there (file-backed, shareable pages; B itself
// is then read only for a two-page sample). A session that only writes a graph skips the repack.
//
// Tiles: 32 columns (two vectors) by up to 4 rows. Each 64-byte load is unpacked once and
// multiplied by every row of the tile from registers, so at M = 4 the unpacking and the weight
// traffic are shared by 4 rows (MLAS's AVX512 CompInt8 kernel shares them by 2). M > 4 runs the
// rows 4 at a time, each group rereading the task's columns (from L2).
//
// Threads: Compute quantizes A on the calling thread, then cuts N into tasks of 64 columns and runs
// them with KernelContext_ParallelFor on ORT's intra-op pool.
//
// CPU: AVX-512 F/BW + VNNI where the CPU has them (vpdpbusd), else AVX2 + FMA (the same tile per
// 16-column group in two 8-column halves, vpmaddubsw + vpmaddwd: the same integer sums and float
// steps, so the same Y bit for bit; EBB_CPU_OPS_ISA=avx2 forces it on an AVX-512 CPU); kernel
// creation fails with a clear error on a CPU with neither.
#pragma once

#include <cstdint>

#include "onnxruntime_c_api.h"

namespace ebb_cpu_ops {

// The op (an object that lives to process exit; ORT keeps pointers to it).
const OrtCustomOp* Int4RowsOp();

// The kernel's instruction sets. Each kernel picks its set when it is created (the CPU's best,
// or AVX2 under EBB_CPU_OPS_ISA=avx2) and runs only that set.
enum class Int4Set { kAvx2, kAvx512Vnni };

// How many kernels this process (this copy of the op: libebb's, or the library's) has created
// with `set`, for tests that must know which set ran. Thread-safe.
uint64_t Int4KernelsCreated(Int4Set set);

}  // namespace ebb_cpu_ops
