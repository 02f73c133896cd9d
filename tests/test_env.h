// Where tests find their inputs. Each path comes from an environment variable when set,
// else from the build's defaults (tests/CMakeLists.txt).
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
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

struct CliResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};

// Runs `command` with sh, stdout and stderr together.
inline CliResult RunShell(const std::string& command) {
  CliResult r;
  const std::string cmd = command + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Runs the built CLI with `args` (a shell fragment: quoting and redirections allowed).
inline CliResult RunCli(const std::string& args) { return RunShell(CliPath() + " " + args); }

// A fresh, uniquely named folder under /tmp (mkdtemp: /tmp/ebb-TAG-XXXXXX), removed with
// everything in it by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string tmpl = "/tmp/ebb-" + tag + "-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace ebb::testing

// Skips the current test, with the path in the message, when an external fixture is absent.
#define EBB_SKIP_UNLESS_EXISTS(path)                                          \
  do {                                                                        \
    if (!std::filesystem::exists(path)) {                                     \
      GTEST_SKIP() << "fixture " << (path) << " is absent (needs ../shared)"; \
    }                                                                         \
  } while (0)
