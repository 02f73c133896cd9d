// tests/integration/cpu_ops/matmul_check.cpp — ebb.cpu.MatMulNBits (libebb_cpu_ops.so) against
// ORT's com.microsoft MatMulNBits (MLAS), op by op, on the models tools/matmul_nbits_model.py
// writes.
//
//   matmul_check --model PREFIX --library libebb_cpu_ops.so [--tolerance 1e-4]
//
// For M = 1, 2, 3, 4, 5 and 9 rows of seeded N(0, 1) activations, runs PREFIX_ref.onnx and
// PREFIX_op.onnx and prints one JSON line per M: the largest |difference| of Y relative to the
// largest |Y| of the reference. Exits 1 when any is over --tolerance.
// For M > 1 it also runs every row alone (M = 1) through both ops and compares that row of the
// M-row output: ebb's op must give it bit for bit (its contract: a row's result does not depend
// on the rows beside it, so batched decode rows equal solo runs) and exits 1 otherwise; MLAS's
// difference is printed ("ref_row_diff_rel") as a measurement, not checked.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check_util.h"
#include "onnxruntime_cxx_api.h"

namespace {

constexpr const char* kTool = "matmul_check";

[[noreturn]] void Die(const std::string& why) { check_util::Die(kTool, why); }

std::vector<float> Run(Ort::Session& s, std::vector<float>& a, long m, long k, long n) {
  std::vector<float> y = check_util::RunMatMul(s, a, m, k);
  if (y.size() != static_cast<size_t>(m * n)) Die("Y is not M x N");
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  std::string prefix, library;
  double tolerance = 1e-4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], v = argv[i + 1];
    if (key == "--model") {
      prefix = v;
    } else if (key == "--library") {
      library = v;
    } else if (key == "--tolerance") {
      tolerance = std::atof(v.c_str());
    } else {
      Die("unknown argument " + key);
    }
  }
  if (prefix.empty() || library.empty()) Die("usage: matmul_check --model PREFIX --library SO");
  const std::string json = check_util::ReadJson(kTool, prefix, "tools/matmul_nbits_model.py");
  const long k = check_util::JsonInt(kTool, json, "k"), n = check_util::JsonInt(kTool, json, "n");

  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "matmul_check");
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(2);
  const std::string ref_path = prefix + "_ref.onnx", op_path = prefix + "_op.onnx";
  Ort::Session ref(env, ref_path.c_str(), so);
  Ort::SessionOptions so_op = so.Clone();
  so_op.RegisterCustomOpsLibrary(library.c_str());
  Ort::Session op(env, op_path.c_str(), so_op);

  std::mt19937 rng(99);
  std::normal_distribution<float> dist(0.f, 1.f);
  bool ok = true;
  for (long m : {1L, 2L, 3L, 4L, 5L, 9L}) {
    std::vector<float> a(static_cast<size_t>(m * k));
    for (float& x : a) x = dist(rng);
    const std::vector<float> want = Run(ref, a, m, k, n), got = Run(op, a, m, k, n);
    double max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(want[i])));
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(want[i]) - got[i]));
    }
    const double rel = max_diff / std::max(max_abs, 1e-30);
    // Each row alone against its row of the M-row multiply.
    long op_rows_differ = 0;
    double ref_row_diff = 0;
    for (long r = 0; m > 1 && r < m; ++r) {
      std::vector<float> row(a.begin() + r * k, a.begin() + (r + 1) * k);
      const std::vector<float> ref1 = Run(ref, row, 1, k, n), op1 = Run(op, row, 1, k, n);
      bool same = true;
      for (long j = 0; j < n; ++j) {
        const size_t at = static_cast<size_t>(r * n + j);
        same = same && std::memcmp(&op1[static_cast<size_t>(j)], &got[at], sizeof(float)) == 0;
        ref_row_diff = std::max(
            ref_row_diff, std::fabs(static_cast<double>(ref1[static_cast<size_t>(j)]) - want[at]));
      }
      op_rows_differ += same ? 0 : 1;
    }
    const bool pass = rel <= tolerance && op_rows_differ == 0;
    ok = ok && pass;
    std::printf(
        "{\"m\": %ld, \"diff_rel\": %.3e, \"op_rows_unlike_alone\": %ld, "
        "\"ref_row_diff_rel\": %.3e, \"pass\": %s}\n",
        m, rel, op_rows_differ, ref_row_diff / std::max(max_abs, 1e-30), pass ? "true" : "false");
  }
  return ok ? 0 : 1;
}
