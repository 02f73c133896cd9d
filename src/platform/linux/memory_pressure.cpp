// Linux implementation of platform/memory_pressure.h.
#include "platform/memory_pressure.h"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "platform/linux/proc_text.h"

namespace ebb::platform {
namespace {

namespace fs = std::filesystem;

// A limit at or above 2^62 is "unlimited" (cgroup v1 writes PAGE_COUNTER_MAX pages as bytes).
constexpr uint64_t kUnlimited = uint64_t{1} << 62;

bool ReadSmallFile(const fs::path& p, std::string& out) {
  std::optional<std::string> text = linux_text::ReadKernelText(p);
  if (!text) return false;
  out = std::move(*text);
  return true;
}

bool ParseU64(std::string_view s, uint64_t& v) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A limit file: a number of bytes, or "max". 0 = no limit (or no file).
uint64_t ReadLimit(const fs::path& p) {
  std::string s;
  uint64_t v = 0;
  if (!ReadSmallFile(p, s) || !ParseU64(s, v) || v >= kUnlimited) return 0;
  return v;
}

uint64_t ReadBytes(const fs::path& p) {
  std::string s;
  uint64_t v = 0;
  if (!ReadSmallFile(p, s) || !ParseU64(s, v)) return 0;
  return v;
}

// "some avg10=1.23 avg60=..." -> 1.23; -1 when the file or the field is missing.
double ReadPsiSomeAvg10(const fs::path& p) {
  std::string s;
  if (!ReadSmallFile(p, s)) return -1;
  const size_t line = s.find("some ");
  if (line == std::string::npos) return -1;
  const size_t at = s.find("avg10=", line);
  if (at == std::string::npos) return -1;
  double v = -1;
  if (std::sscanf(s.c_str() + at + 6, "%lf", &v) != 1) return -1;
  return v;
}

int64_t ReadEventsField(const std::string& events, std::string_view name) {
  size_t pos = 0;
  while (pos < events.size()) {
    size_t end = events.find('\n', pos);
    if (end == std::string::npos) end = events.size();
    const std::string_view line(events.data() + pos, end - pos);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ' ') {
      uint64_t v = 0;
      if (ParseU64(line.substr(name.size() + 1), v)) return static_cast<int64_t>(v);
    }
    pos = end + 1;
  }
  return -1;
}

void ReadMachineHeadroom(const fs::path& proc, PressureSample& s) {
  std::string meminfo;
  if (!ReadSmallFile(proc / "meminfo", meminfo)) return;
  uint64_t total_kb = 0, available_kb = 0;
  std::istringstream in(meminfo);
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:") total_kb = value;
    if (key == "MemAvailable:") available_kb = value;
  }
  if (total_kb == 0 || available_kb > total_kb) return;
  s.limit_bytes = total_kb * 1024;
  s.usage_bytes = (total_kb - available_kb) * 1024;
}

// The cgroup path of `controller_match` in /proc/self/cgroup: the "0::" line for v2, the line
// whose controller list names "memory" for v1.
std::string CgroupPath(const std::string& self_cgroup, bool v2) {
  std::istringstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (v2 && id == "0" && controllers.empty()) return path;
    if (!v2) {
      std::istringstream list(controllers);
      std::string c;
      while (std::getline(list, c, ',')) {
        if (c == "memory") return path;
      }
    }
  }
  return {};
}

fs::path Under(const fs::path& root, const std::string& cgroup_path) {
  return cgroup_path == "/" ? root : root / cgroup_path.substr(1);
}

}  // namespace

std::string PressureSource::Describe() const {
  return cgroup.empty() ? "the machine (" + (proc / "pressure/memory").string() + ")"
                        : "cgroup " + cgroup.string();
}

PressureSource ResolvePressureSource(const std::string& setting, const fs::path& proc,
                                     const fs::path& sys_fs_cgroup) {
  PressureSource source;
  source.proc = proc;
  if (setting == "machine") return source;
  if (setting != "auto") {
    source.cgroup = setting;
    return source;
  }
  std::string self;
  if (!ReadSmallFile(proc / "self/cgroup", self)) return source;
  std::error_code ec;
  // cgroup v2: mounted at /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid). Only a
  // folder with memory.current has the memory controller (the root cgroup has none).
  const std::string v2 = CgroupPath(self, true);
  if (!v2.empty()) {
    for (const fs::path& root : {sys_fs_cgroup, sys_fs_cgroup / "unified"}) {
      const fs::path dir = Under(root, v2);
      if (fs::exists(dir / "memory.current", ec)) {
        source.cgroup = dir;
        return source;
      }
    }
  }
  const std::string v1 = CgroupPath(self, false);
  if (!v1.empty()) {
    const fs::path dir = Under(sys_fs_cgroup / "memory", v1);
    if (fs::exists(dir / "memory.usage_in_bytes", ec)) source.cgroup = dir;
  }
  return source;
}

PressureSample ReadPressure(const PressureSource& source) {
  PressureSample s;
  const fs::path& cg = source.cgroup;
  std::error_code ec;
  if (!cg.empty() && fs::exists(cg / "memory.current", ec)) {  // v2
    s.psi_some_avg10 = ReadPsiSomeAvg10(cg / "memory.pressure");
    std::string events;
    if (ReadSmallFile(cg / "memory.events", events)) {
      s.events_high = ReadEventsField(events, "high");
      s.events_max = ReadEventsField(events, "max");
    }
    s.usage_bytes = ReadBytes(cg / "memory.current");
    s.limit_bytes = ReadLimit(cg / "memory.high");
    if (s.limit_bytes == 0) s.limit_bytes = ReadLimit(cg / "memory.max");
  } else if (!cg.empty() && fs::exists(cg / "memory.usage_in_bytes", ec)) {  // v1
    s.usage_bytes = ReadBytes(cg / "memory.usage_in_bytes");
    s.limit_bytes = ReadLimit(cg / "memory.limit_in_bytes");
  }
  if (s.psi_some_avg10 < 0) s.psi_some_avg10 = ReadPsiSomeAvg10(source.proc / "pressure/memory");
  if (s.limit_bytes == 0) ReadMachineHeadroom(source.proc, s);
  return s;
}

}  // namespace ebb::platform
