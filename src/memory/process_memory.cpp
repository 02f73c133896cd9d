#include "memory/process_memory.h"

#include <cstdlib>
#include <string>

#include "ebb/stats.h"
#include "memory/heap_trim.h"
#include "platform/heap.h"
#include "platform/system_info.h"

namespace ebb {

ProcessMemory ReadProcessMemory() {
  const std::optional<std::string> text = platform::ReadSelfMemoryStatus();
  if (!text) return {};
  return internal::ParseProcessStatus(*text);
}

namespace internal {

ProcessMemory ParseProcessStatus(std::string_view text) {
  ProcessMemory m;
  int64_t anon = -1, swap = -1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    // "   1234 kB" -> bytes
    const int64_t bytes =
        std::strtoll(std::string(line.substr(colon + 1)).c_str(), nullptr, 10) * 1024;
    if (key == "VmRSS") m.rss_bytes = bytes;
    if (key == "VmHWM") m.peak_rss_bytes = bytes;
    if (key == "RssAnon") anon = bytes;
    if (key == "VmSwap") swap = bytes;
    if (key == "RssFile") m.file_bytes = bytes;
    if (key == "RssShmem") m.shmem_bytes = bytes;
  }
  if (anon >= 0) m.anon_bytes = anon + (swap > 0 ? swap : 0);
  return m;
}

void TrimHeap() {
  // glibc keeps freed memory resident (top pad, fastbins, unmerged arenas); give it back.
  platform::ReturnFreeHeap();
}

int LimitMallocArenas(int n) {
  if (const char* env = std::getenv("MALLOC_ARENA_MAX"); env != nullptr && *env != '\0') {
    return std::atoi(env);  // the user's choice wins (glibc read it at startup)
  }
  return platform::LimitHeapArenas(n) ? n : 0;
}

}  // namespace internal
}  // namespace ebb
