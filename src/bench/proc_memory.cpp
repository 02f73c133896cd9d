#include "bench/proc_memory.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ebb::bench {
namespace {

// "   1234 kB" -> bytes.
uint64_t KiloBytes(std::string_view rest) {
  const std::string s(rest);
  return std::strtoull(s.c_str(), nullptr, 10) * 1024;
}

}  // namespace

ProcMemory ParseProcStatus(std::string_view text) {
  ProcMemory m;
  uint64_t rss_anon = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view rest = line.substr(colon + 1);
    if (key == "VmRSS") {
      m.rss_bytes = KiloBytes(rest);
    } else if (key == "VmHWM") {
      m.peak_rss_bytes = KiloBytes(rest);
    } else if (key == "RssAnon") {
      rss_anon = KiloBytes(rest);
    } else if (key == "VmSwap") {
      m.swap_bytes = KiloBytes(rest);
    }
  }
  m.anon_bytes = rss_anon + m.swap_bytes;
  return m;
}

bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

ProcMemory ReadProcMemory() {
  std::ifstream in("/proc/self/status");
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseProcStatus(ss.str());
}

}  // namespace ebb::bench
