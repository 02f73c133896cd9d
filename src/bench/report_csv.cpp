#include "bench/report_csv.h"

#include <cstdio>
#include <optional>

namespace ebb::bench {
namespace {

std::string Cell(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : ""; }

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// Quotes a field when it holds a comma, quote or newline (RFC 4180).
std::string Field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void AppendMemory(std::string& row, const MemorySample& m) {
  // Appended piece by piece: GCC 12 reports a false -Wrestrict on chains of "," + string.
  for (const std::string& cell :
       {std::to_string(m.rss_bytes), std::to_string(m.anon_bytes), Cell(m.kv.in_use_bytes),
        Cell(m.kv.reserved_bytes), Cell(m.arena.in_use_bytes),
        Cell(m.arena.total_allocated_bytes)}) {
    row += ',';
    row += cell;
  }
}

// The device columns of each memory sample (only when a run has device figures).
constexpr const char* kDeviceColumns[] = {"device_kv_in_use_bytes", "device_kv_reserved_bytes",
                                          "device_used_bytes", "device_driver_process_bytes"};

void AppendDevice(std::string& row, const MemorySample& m) {
  for (const std::string& cell : {Cell(m.device.kv_in_use_bytes), Cell(m.device.kv_reserved_bytes),
                                  Cell(m.device.used_bytes), Cell(m.device.driver_process_bytes)}) {
    row += ',';
    row += cell;
  }
}

bool AnyDevice(const std::vector<RunResult>& runs) {
  for (const auto& r : runs) {
    for (const auto& it : r.iterations) {
      for (const MemorySample* m : {&it.before, &it.last_token, &it.after}) {
        if (m->device.kv_in_use_bytes || m->device.used_bytes) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string ReportCsv(const std::vector<RunResult>& runs) {
  std::string out =
      "run,engine,scenario,index,warmup,prompt_tokens,generated_tokens,ttft_s,tps,e2e_s,load_s";
  for (const char* when : {"before", "last_token", "after"}) {
    for (const char* col : {"rss_bytes", "anon_bytes", "kv_in_use_bytes", "kv_reserved_bytes",
                            "arena_in_use_bytes", "arena_total_allocated_bytes"}) {
      out += std::string(",") + when + "_" + col;
    }
  }
  out += ",peak_rss_bytes,texts,padded_tokens,cached_tokens,after_prefix_cache_bytes";
  const bool device = AnyDevice(runs);
  if (device) {
    for (const char* when : {"before", "last_token", "after"}) {
      for (const char* col : kDeviceColumns) out += std::string(",") + when + "_" + col;
    }
  }
  out += "\n";
  for (const auto& r : runs) {
    for (const auto& it : r.iterations) {
      std::string row = Field(r.name) + "," + Field(r.engine) + "," + Field(r.scenario) + "," +
                        std::to_string(it.index) + "," + (it.warmup ? "1" : "0") + "," +
                        std::to_string(it.timing.prompt_tokens) + "," +
                        std::to_string(it.timing.generated_tokens) + "," + Num(it.timing.ttft_s) +
                        "," + Num(it.timing.tps) + "," + Num(it.timing.e2e_s) + "," +
                        (it.timing.load_s ? Num(*it.timing.load_s) : "");
      AppendMemory(row, it.before);
      AppendMemory(row, it.last_token);
      AppendMemory(row, it.after);
      for (const std::string& cell :
           {std::to_string(it.peak_rss_bytes), std::to_string(it.timing.texts),
            std::to_string(it.timing.padded_tokens), std::to_string(it.timing.cached_tokens),
            Cell(it.after.kv.prefix_cache_bytes)}) {
        row += ',';
        row += cell;
      }
      if (device) {
        AppendDevice(row, it.before);
        AppendDevice(row, it.last_token);
        AppendDevice(row, it.after);
      }
      out += row + "\n";
    }
  }
  return out;
}

}  // namespace ebb::bench
