// Helpers shared by the tokenizer tests: where the test data lives, loading tokenizers by
// family name, and reading the reference JSON produced by tools/tokref/gen.js.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb::testing {

inline std::filesystem::path TokenizerDataDir() {
  return std::filesystem::path(EBB_SOURCE_DIR) / "tests" / "tokenizer" / "data";
}

inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "shared/<rel>" -> SharedDir()/<rel>; "data/<rel>" -> TokenizerDataDir()/<rel>.
inline std::filesystem::path ResolveTokenizerSpec(const std::string& spec) {
  if (spec.rfind("shared/", 0) == 0) return SharedDir() / spec.substr(7);
  if (spec.rfind("data/", 0) == 0) return TokenizerDataDir() / spec.substr(5);
  return spec;
}

inline std::filesystem::path Gpt2Path() {
  return SharedDir() / "models" / "tiny-random-gpt2-fp32" / "tokenizer.json";
}
inline std::filesystem::path Phi3Dir() { return SharedDir() / "models" / "tokenizers" / "phi3"; }
inline std::filesystem::path WhisperDir() {
  return SharedDir() / "models" / "tokenizers" / "whisper";
}

// Loads a tokenizer once per path for the whole test binary (tokenizers are immutable).
inline const Tokenizer& CachedTokenizer(const std::filesystem::path& p) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[p.string()];
  if (!slot) slot = Tokenizer::FromFile(p);
  return *slot;
}

}  // namespace ebb::testing
