#include "model/model_kernels.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "model/cpu_ops_rewrite.h"
#include "ort/cpu_kernels.h"

namespace ebb::internal {
namespace {

bool IsStandardDomain(const std::string& domain) {
  return domain.empty() || domain == "com.microsoft" || domain == "ai.onnx.ml" ||
         domain == "com.microsoft.nchwc";
}

bool IsMatMul(const OpId& op) {
  if (op.domain.empty()) return op.op_type == "MatMul" || op.op_type == "Gemm";
  return op.domain == "com.microsoft" && op.op_type == "FusedMatMul";
}

bool IsAttention(const OpId& op) {
  return op.domain == "com.microsoft" &&
         (op.op_type == "GroupQueryAttention" || op.op_type == "MultiHeadAttention" ||
          op.op_type == "Attention" || op.op_type == "SparseAttention");
}

// "MatMul x7" for one operator; several of a family are listed in the map's order.
std::string Counted(const std::string& name, int count) {
  return name + " x" + std::to_string(count);
}

// The instruction set ebb's built-in kernel for `op_type` runs on a CPU with `flags`
// (CpuOpsIsasFor), or AVX2 where EBB_CPU_OPS_ISA=avx2 makes the kernels take it.
std::string BuiltinIsa(const std::string& op_type, const std::set<std::string>& flags) {
  const char* forced = std::getenv("EBB_CPU_OPS_ISA");
  if (forced && std::strcmp(forced, "avx2") == 0) return "AVX2";
  const CpuOpsIsas isas = CpuOpsIsasFor(flags);
  return op_type == "MatMulNBits" ? isas.matmul : isas.attention;
}

}  // namespace

std::string DescribeModelKernels(const std::map<OpId, int>& ops,
                                 const std::set<std::string>& cpu_flags,
                                 const std::string& custom_ops_library,
                                 const std::string& gpu_provider,
                                 const std::string& builtin_cpu_ops) {
  std::vector<std::string> nbits, matmul, attention, custom, builtin;
  for (const auto& [op, count] : ops) {
    if (!builtin_cpu_ops.empty() && op.domain == "ebb.cpu") {
      builtin.push_back(Counted(op.domain + "." + op.op_type, count) + " (" +
                        BuiltinIsa(op.op_type, cpu_flags) + ")");
    } else if (op.domain == "com.microsoft" && op.op_type == "MatMulNBits") {
      nbits.push_back(Counted(op.op_type, count));
    } else if (IsMatMul(op)) {
      matmul.push_back(Counted(op.op_type, count));
    } else if (IsAttention(op)) {
      attention.push_back(Counted(op.op_type, count));
    } else if (!IsStandardDomain(op.domain)) {
      custom.push_back(Counted(op.domain + "." + op.op_type, count));
    }
  }
  auto join = [](const std::vector<std::string>& parts, const char* sep) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  };
  const std::string library = custom_ops_library.empty()
                                  ? "no custom_ops_library named"
                                  : std::filesystem::path(custom_ops_library).filename().string();
  if (!gpu_provider.empty()) {
    std::vector<std::string> all;
    for (const auto* list : {&nbits, &matmul, &attention}) {
      all.insert(all.end(), list->begin(), list->end());
    }
    for (const auto& c : custom) all.push_back(c + " (custom op, " + library + ")");
    return all.empty() ? gpu_provider : gpu_provider + ": " + join(all, ", ");
  }
  std::vector<std::string> groups;
  if (!nbits.empty()) groups.push_back(join(nbits, ", ") + ": MLAS " + MlasInt4Kernel(cpu_flags));
  if (!matmul.empty()) groups.push_back(join(matmul, ", ") + ": MLAS GEMM");
  if (!attention.empty()) groups.push_back(join(attention, ", ") + ": ORT CPU");
  if (!builtin.empty()) {
    groups.push_back(join(builtin, ", ") + ": ebb (built in, cpu_ops=" + builtin_cpu_ops + ")");
  }
  if (!custom.empty()) groups.push_back(join(custom, ", ") + ": custom op (" + library + ")");
  std::string out = groups.empty() ? "ORT CPU" : join(groups, "; ");
  if (!nbits.empty() && cpu_flags.count("amx_int8") > 0) {
    out += " (CPU has AMX; MLAS uses it for 8-bit QGEMM only)";
  }
  return out;
}

}  // namespace ebb::internal
