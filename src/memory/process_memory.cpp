#include <malloc.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ebb/stats.h"
#include "memory/heap_trim.h"

namespace ebb {

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  int64_t anon = -1, swap = -1;
  auto kib = [](const std::string& l, size_t prefix) {
    return std::stoll(l.substr(prefix)) * 1024;  // "VmRSS:     1234 kB"
  };
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_bytes = kib(line, 6);
    if (line.rfind("VmHWM:", 0) == 0) m.peak_rss_bytes = kib(line, 6);
    if (line.rfind("RssAnon:", 0) == 0) anon = kib(line, 8);
    if (line.rfind("VmSwap:", 0) == 0) swap = kib(line, 7);
    if (line.rfind("RssFile:", 0) == 0) m.file_bytes = kib(line, 8);
  }
  if (anon >= 0) m.anon_bytes = anon + (swap > 0 ? swap : 0);
  return m;
}

std::string ToJson(const MemoryStats& s) {
  nlohmann::ordered_json j;
  j["process"] = {{"rss_bytes", s.process.rss_bytes},
                  {"peak_rss_bytes", s.process.peak_rss_bytes},
                  {"anon_bytes", s.process.anon_bytes},
                  {"file_bytes", s.process.file_bytes}};
  j["kv"] = {{"in_use_bytes", s.kv.in_use_bytes},
             {"reserved_bytes", s.kv.reserved_bytes},
             {"peak_in_use_bytes", s.kv.peak_in_use_bytes},
             {"max_bytes", s.kv.max_bytes}};
  const ArenaStats& a = s.cpu_arena;
  j["cpu_arena"] = {{"available", a.available},
                    {"in_use_bytes", a.in_use_bytes},
                    {"total_allocated_bytes", a.total_allocated_bytes},
                    {"max_in_use_bytes", a.max_in_use_bytes},
                    {"num_allocs", a.num_allocs},
                    {"num_extensions", a.num_extensions},
                    {"num_shrinkages", a.num_shrinkages},
                    {"limit_bytes", a.limit_bytes}};
  j["num_shrinks"] = s.num_shrinks;
  j["num_requests"] = s.num_requests;
  return j.dump();
}

namespace internal {

void TrimHeap() {
  // glibc keeps freed memory resident (top pad, fastbins, unmerged arenas); give it back.
  malloc_trim(0);
}

}  // namespace internal
}  // namespace ebb
