// Progress of a model load on a terminal: while a model folder loads, a line on stderr shows
// the bytes read so far against the weights' size, and the elapsed time; it is erased when the
// load ends. On a non-terminal stderr it prints nothing (scripts read stderr for errors).
//
// ORT reads and prepacks the weights inside one call, with no callback, so "read so far" is the
// growth of the process's resident memory since the load began: the weights are the bulk of
// it. Capped below 100 % until the load returns.
// Ownership: RAII; the destructor stops and joins the drawing thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

namespace ebb::cli {

class LoadProgress {
 public:
  explicit LoadProgress(const std::filesystem::path& model_dir);
  ~LoadProgress();
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;  // only on a terminal
};

}  // namespace ebb::cli
