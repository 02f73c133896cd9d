// Helpers for the `ebb bench` tests: run the CLI, read files, temporary paths.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_env.h"

namespace ebb::testing {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string TinyModel() { return (TestModelsDir() / "llama-tiny-fp32").string(); }

}  // namespace ebb::testing
