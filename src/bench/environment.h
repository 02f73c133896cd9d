// Where a benchmark ran, for the report: CPU, cores, kernel, ONNX Runtime and ebb versions.
// Read once per invocation; never throws (unknown fields are "unknown").
#pragma once

#include <string>

namespace ebb::bench {

struct Environment {
  std::string cpu_model;    // /proc/cpuinfo "model name"
  int num_cores = 0;        // logical CPUs this process may use
  std::string os;           // uname: sysname release machine
  std::string ort_version;  // the loaded libonnxruntime (ebb::OrtVersion())
  std::string cpu_kernels;  // the MLAS kernel family this CPU selects (ebb::CpuKernels())
  std::string ebb_version;
  std::string ebb_git_commit;  // from the build's configure step, or "unknown"
  std::string created_utc;     // ISO 8601, e.g. 2026-11-29T20:15:00Z
};

Environment ReadEnvironment();

}  // namespace ebb::bench
