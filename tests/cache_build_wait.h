// tests/cache_build_wait.h — waiting, in a test, for a model's background model-cache build
// (docs/memory.md "Compiled-model cache") to end.
#pragma once

#include <chrono>
#include <thread>

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

}  // namespace ebb::testing
