// tests/integration/cpu_ops/check_util.h — what the op-by-op checkers (gqa_check.cpp,
// matmul_check.cpp, and cpu_ops_test.cpp's in-process comparison) share: failing with a message,
// reading the small JSON file the model scripts (tools/gqa_model.py, tools/matmul_nbits_model.py)
// write beside a model, and running a one-node matmul model.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "onnxruntime_cxx_api.h"

namespace check_util {

// Prints "TOOL: WHY" and exits 2 (1 is a failed comparison).
[[noreturn]] inline void Die(const char* tool, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", tool, why.c_str());
  std::exit(2);
}

// PREFIX.json's text; dies naming `writer` when it cannot be read.
inline std::string ReadJson(const char* tool, const std::string& prefix, const char* writer) {
  std::ifstream f(prefix + ".json");
  std::stringstream s;
  s << f.rdbuf();
  if (s.str().empty()) Die(tool, "cannot read " + prefix + ".json (" + writer + " writes it)");
  return s.str();
}

// The integer value of "key" in a flat JSON object (as json.dump writes it).
inline long JsonInt(const char* tool, const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  if (at == std::string::npos) Die(tool, "no " + key + " in the model's .json");
  return std::strtol(json.c_str() + at + key.size() + 3, nullptr, 10);
}

inline bool JsonTrue(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  return at != std::string::npos && json.compare(at + key.size() + 4, 4, "true") == 0;
}

// Y of tools/matmul_nbits_model.py's one-node model in session `s` for the M x K activations `a`
// (read, not changed; ORT's tensor API takes a mutable pointer).
inline std::vector<float> RunMatMul(Ort::Session& s, std::vector<float>& a, int64_t m, int64_t k) {
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const std::vector<int64_t> shape = {m, k};
  Ort::Value in = Ort::Value::CreateTensor<float>(mem, a.data(), a.size(), shape.data(), 2);
  const char* in_names[] = {"A"};
  const char* out_names[] = {"Y"};
  auto out = s.Run(Ort::RunOptions{}, in_names, &in, 1, out_names, 1);
  const float* y = out[0].GetTensorData<float>();
  return std::vector<float>(y, y + out[0].GetTensorTypeAndShapeInfo().GetElementCount());
}

}  // namespace check_util
