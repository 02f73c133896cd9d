// Where tests find their inputs. Each path comes from an environment variable when set,
// else from the build's defaults (tests/CMakeLists.txt).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ebb::testing {

inline std::filesystem::path EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : fallback;
}

// Synthesized test models (fixture `synth_test_models`): EBB_TEST_MODELS.
inline std::filesystem::path TestModelsDir() {
  return EnvOr("EBB_TEST_MODELS", EBB_TEST_MODELS_DEFAULT);
}

// External fixtures, absent in a user's fresh clone: EBB_SHARED_DIR (default <repo>/../shared).
inline std::filesystem::path SharedDir() { return EnvOr("EBB_SHARED_DIR", EBB_SHARED_DIR_DEFAULT); }

// The built `ebb` CLI: EBB_CLI.
inline std::string CliPath() { return EnvOr("EBB_CLI", EBB_CLI_DEFAULT).string(); }

}  // namespace ebb::testing

// Skips the current test, with the path in the message, when an external fixture is absent.
#define EBB_SKIP_UNLESS_EXISTS(path)                                          \
  do {                                                                        \
    if (!std::filesystem::exists(path)) {                                     \
      GTEST_SKIP() << "fixture " << (path) << " is absent (needs ../shared)"; \
    }                                                                         \
  } while (0)
