#include "cli/load_progress.h"

#include <chrono>
#include <cstdio>

#include "core/strings.h"
#include "ebb/process_memory.h"
#include "ebb/stats.h"
#include "model/model_info.h"
#include "platform/process.h"

namespace ebb::cli {

LoadProgress::LoadProgress(const std::filesystem::path& model_dir) {
  if (!platform::IsTerminal(platform::StandardStream::kStderr)) return;
  uint64_t weights = 0;
  try {
    weights = internal::EstimateWeightsBytes(model_dir);
  } catch (...) {
    return;  // the load itself reports a bad folder
  }
  const std::string name =
      model_dir.filename().empty() ? model_dir.parent_path().filename() : model_dir.filename();
  thread_ = std::thread([this, weights, name] {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t rss0 = ReadProcessMemory().rss_bytes;
    bool drawn = false;
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < 0.5) continue;  // quick loads draw nothing
      const int64_t grown = std::max<int64_t>(0, ReadProcessMemory().rss_bytes - rss0);
      const uint64_t read = std::min<uint64_t>(static_cast<uint64_t>(grown), weights * 99 / 100);
      std::fprintf(stderr, "\rloading %s: %s of %s  %.1f s   ", name.c_str(),
                   internal::FormatBytes(read).c_str(), internal::FormatBytes(weights).c_str(), s);
      std::fflush(stderr);
      drawn = true;
    }
    if (drawn) {
      std::fprintf(stderr, "\r\033[K");  // erase the line
      std::fflush(stderr);
    }
  });
}

LoadProgress::~LoadProgress() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace ebb::cli
