// ebb's own CPU kernels without a rewritten folder (option cpu_ops; docs/cpu_ops.md): a
// load-time rewrite that moves a decoder graph's com.microsoft GroupQueryAttention and
// MatMulNBits nodes to the domain ebb.cpu, whose kernels (src/cpu_ops/) are compiled into libebb
// and registered on the model's sessions (RegisterBuiltinCpuOps).
//
// Why at load: tools/cpu_ops_model.py writes a second folder for the same move, which a user
// must make, keep and ship beside the original. The ops take com.microsoft's own inputs and
// attributes, so the move changes each node's domain field and nothing else (plus one
// opset_import entry for the domain); the weights are not touched. As with last_logits.h, the
// model file is never modified: the rewritten ModelProto goes to an anonymous memory file that
// ORT loads by path, with the external data still read from the model's folder, and the
// compiled-model cache stores the rewritten graph (its key includes cpu_ops).
//
// Which nodes (the kernels' contracts, src/cpu_ops/*.h):
//   attention  com.microsoft GroupQueryAttention with no input after cos/sin_cache (no
//              position_ids, attention_bias or head_sink), whose past_key graph input is float32,
//              in a model whose head_size the kernel has (16, 32, 48, 64, 96, 128). Needs AVX2 +
//              FMA + F16C (or AVX-512 F/BW/VL).
//   matmul     com.microsoft MatMulNBits with bits 4, a power-of-two block_size from 32,
//              accuracy_level 4 (the kernel quantizes activations to int8 as MLAS does at level
//              4; another level would change the arithmetic), B, float32 scales and uint8
//              zero_points (when present) as initializers, no g_idx or bias. Needs AVX2 + FMA
//              (or AVX-512 F/BW + VNNI, which it uses where present). Its kernel repacks B (the
//              size of the int4 weights): into the model cache entry's files, which later loads
//              map, or anonymous memory on a load without an entry (cpu_ops/pack_file.h,
//              docs/cpu_ops.md "Memory").
// Every other node is left as it is, and each left node of these types is listed with its reason.
// A kernel that still refuses a node when the session is created (a shape the plan could not
// see) fails that session; the caller then loads the graph without this rewrite.
//
// Thread-safety: free functions; RegisterBuiltinCpuOps may be called from any thread.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/genai_config.h"
#include "model/graph_ops.h"
#include "model/last_logits.h"

namespace ebb::internal {

// The domain of ebb's kernels (src/cpu_ops/cpu_ops.h's kDomain).
inline constexpr const char* kCpuOpsDomain = "ebb.cpu";

// The kinds of nodes cpu_ops moves, after the CPU check.
struct CpuOpsKinds {
  bool attention = false;
  bool matmul = false;
  bool any() const { return attention || matmul; }
};

// The instruction set each kind's kernel runs on a CPU with `cpu_flags` (CpuFlags()), as the
// kernels pick it themselves (cpu_ops/gqa_kernels.cpp, cpu_ops/int4_rows_op.cpp), or "" where it
// cannot run: attention "AVX-512" (F/BW/VL) or "AVX2" (+ FMA + F16C); matmul "AVX-512 VNNI"
// (F/BW + VNNI) or "AVX2" (+ FMA). The CPU's choice: EBB_CPU_OPS_ISA=avx2, which makes the
// kernels take AVX2 anyway, is not read here (it changes no graph).
struct CpuOpsIsas {
  std::string attention;
  std::string matmul;
};
CpuOpsIsas CpuOpsIsasFor(const std::set<std::string>& cpu_flags);

// Resolves the option's value ("off", "auto", "attention", "matmul"; checked by the option
// table) against this CPU's flags (CpuFlags()): auto takes each kind the CPU can run; a named
// kind the CPU cannot run is dropped and `note` says why (the load goes on without it).
CpuOpsKinds ResolveCpuOps(const std::string& setting, const std::set<std::string>& cpu_flags,
                          std::string* note);

// What a rewrite moves (PlanCpuOps) or moved (RewriteForCpuOps).
struct CpuOpsPlan {
  int attention = 0;              // GroupQueryAttention nodes moved
  int matmul = 0;                 // MatMulNBits nodes moved
  int already_ebb_cpu = 0;        // nodes the graph already has in ebb.cpu (then nothing moves)
  std::vector<std::string> left;  // "node 'NAME' (OP): why", one per node of a kind left
  // The file could not be opened or mapped (proto::Malformed::system): nothing is known about
  // its nodes, and another try may move some.
  bool unread = false;
  int moved() const { return attention + matmul; }
};

// Which nodes of `onnx_file`'s main graph move for `kinds` (above). `head_size`:
// genai_config.json's model.decoder.head_size (0 = unknown: attention stays). A graph that
// already has ebb.cpu nodes (a folder rewritten by tools/cpu_ops_model.py) moves nothing. Throws
// nothing: a malformed file gives an empty plan and `why_not` (`unread` when it was not read).
CpuOpsPlan PlanCpuOps(const std::filesystem::path& onnx_file, CpuOpsKinds kinds, int head_size,
                      std::string* why_not);

// Writes `onnx_file` with the planned nodes moved into a memory file (RewrittenModel, as
// last_logits.h's; `onnx_file` may itself be one). `plan` receives what moved. Returns nullopt
// with `why_not` when nothing moves, the file is malformed or the memory file cannot be written;
// `system_failure` (may be null) as RewriteForLastLogits's (last_logits.h).
std::optional<RewrittenModel> RewriteForCpuOps(const std::filesystem::path& onnx_file,
                                               CpuOpsKinds kinds, int head_size, CpuOpsPlan* plan,
                                               std::string* why_not,
                                               bool* system_failure = nullptr);

// What cpu_ops does for one load of `cfg` (a load, and `ebb info`'s kernels line, decide alike):
// nothing with the setting off, on a device (`on_device`: its provider runs the graph), for an
// encoder, or when the folder names libebb_cpu_ops.so (`custom_ops_library`: it registers the same
// domain); else the kinds the CPU runs and the plan over the graph. `notes` receives what a load
// logs (kinds the CPU lacks, nodes left, why nothing moves).
struct CpuOpsDecision {
  CpuOpsKinds kinds;  // none when nothing moves
  // The load registers the ebb.cpu domain: when nodes move, and when the CPU runs a kind but the
  // graph could not be read (plan.unread) and the folder names no custom-op library, because a
  // model-cache entry an earlier load built under the same key may hold moved nodes (before, it
  // failed as "not a registered op" and was removed).
  bool register_kernels = false;
  CpuOpsPlan plan;
  std::vector<std::string> notes;
};
CpuOpsDecision DecideCpuOps(const GenaiConfig& cfg, const std::string& setting, bool on_device,
                            const std::string& custom_ops_library);

// The kernels line's operator counts (model_kernels.h) after `moved` nodes went to ebb.cpu.
void ApplyCpuOpsToKernels(const CpuOpsPlan& moved, std::map<OpId, int>* ops);

// Registers libebb's built-in ebb.cpu domain on `so`. Throws Ort::Exception when ORT refuses.
void RegisterBuiltinCpuOps(Ort::SessionOptions& so);

}  // namespace ebb::internal
