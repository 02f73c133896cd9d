// tests/cache_build_wait.h — model-cache helpers for tests: waiting for a model's background build
// (docs/memory.md "Compiled-model cache") to end.
#pragma once

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/stats.h"

namespace ebb::testing {

// Polls `model`'s weights figures every 20 ms while its cache state is "building", for at most
// `timeout`; returns the last figures read (cache "built", "failed", or still "building" when the
// time ran out: the caller asserts which it expects).
inline WeightsMemory WaitForCacheBuild(Model& model,
                                       std::chrono::seconds timeout = std::chrono::seconds(120)) {
  WeightsMemory w = model.runtime().Stats().weights;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (w.cache == "building" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w = model.runtime().Stats().weights;
  }
  return w;
}

// The committed entries in the cache folder `root`: its folders but the builds' temporary ones
// (".tmp-…"; the lock files are files). None when `root` does not exist.
inline std::vector<std::filesystem::path> CacheEntries(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    if (e.is_directory(ec) && !e.path().filename().string().starts_with(".tmp-")) {
      out.push_back(e.path());
    }
  }
  return out;
}

}  // namespace ebb::testing
