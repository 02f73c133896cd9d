// tests/integration/cpu_ops/check_util.h — what the op-by-op checkers (gqa_check.cpp,
// matmul_check.cpp) share: failing with a message, and reading the small JSON file the model
// scripts (tools/gqa_model.py, tools/matmul_nbits_model.py) write beside a model.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace check_util
