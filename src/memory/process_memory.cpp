#include "memory/process_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ebb/stats.h"
#include "memory/heap_trim.h"

namespace ebb {
namespace internal {

nlohmann::ordered_json KvMemoryJson(const KvMemory& kv) {
  return {{"in_use_bytes", kv.in_use_bytes},
          {"reserved_bytes", kv.reserved_bytes},
          {"peak_in_use_bytes", kv.peak_in_use_bytes},
          {"max_bytes", kv.max_bytes}};
}

nlohmann::ordered_json ArenaStatsJson(const ArenaStats& a) {
  return {{"available", a.available},
          {"in_use_bytes", a.in_use_bytes},
          {"total_allocated_bytes", a.total_allocated_bytes},
          {"max_in_use_bytes", a.max_in_use_bytes},
          {"num_allocs", a.num_allocs},
          {"num_extensions", a.num_extensions},
          {"num_shrinkages", a.num_shrinkages},
          {"limit_bytes", a.limit_bytes}};
}

nlohmann::ordered_json WeightsMemoryJson(const WeightsMemory& w) {
  return {{"state", w.state},
          {"anon_bytes", w.anon_bytes},
          {"file_backed_bytes", w.file_backed_bytes},
          {"file_resident_bytes", w.file_resident_bytes},
          {"num_releases", w.num_releases}};
}

}  // namespace internal

ProcessMemory ReadProcessMemory() {
  std::ifstream in("/proc/self/status");
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return internal::ParseProcessStatus(text.str());
}

std::string ToJson(const MemoryStats& s) {
  nlohmann::ordered_json j;
  j["process"] = {{"rss_bytes", s.process.rss_bytes},
                  {"peak_rss_bytes", s.process.peak_rss_bytes},
                  {"anon_bytes", s.process.anon_bytes},
                  {"file_bytes", s.process.file_bytes},
                  {"shmem_bytes", s.process.shmem_bytes}};
  j["kv"] = internal::KvMemoryJson(s.kv);
  j["cpu_arena"] = internal::ArenaStatsJson(s.cpu_arena);
  j["num_shrinks"] = s.num_shrinks;
  j["num_requests"] = s.num_requests;
  j["policies"] = {{"shrink_every", s.shrink_every},
                   {"shrink_above_bytes", s.shrink_above_bytes},
                   {"ort_shrink_every_run", s.ort_shrink_every_run}};
  j["weights_bytes"] = s.weights_bytes;
  j["weights"] = internal::WeightsMemoryJson(s.weights);
  return j.dump();
}

std::string ToJson(const WeightsRelease& r) {
  const nlohmann::ordered_json j = {{"released", r.released},
                                    {"reason", r.reason},
                                    {"resident_before_bytes", r.resident_before_bytes},
                                    {"resident_after_bytes", r.resident_after_bytes}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
  malloc_trim(0);
}

int LimitMallocArenas(int n) {
  if (const char* env = std::getenv("MALLOC_ARENA_MAX"); env != nullptr && *env != '\0') {
    return std::atoi(env);  // the user's choice wins (glibc read it at startup)
  }
  return mallopt(M_ARENA_MAX, n) == 1 ? n : 0;
}

}  // namespace internal
}  // namespace ebb
