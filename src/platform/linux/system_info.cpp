// Linux implementation of platform/system_info.h: /proc, /sys, sysconf, sched_getaffinity, uname.
#include "platform/system_info.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "platform/linux/proc_text.h"

namespace ebb::platform {
namespace {

std::optional<int> ReadInt(const std::string& path) {
  std::ifstream in(path);
  int v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

// cgroup v2 cpu.max ("max 100000" or "200000 100000") as quota / period; nullopt for "max" or
// an unreadable file.
std::optional<double> ReadCpuMax(const std::string& path) {
  std::ifstream in(path);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  try {
    const double q = std::stod(quota);
    return q > 0 ? std::optional<double>(q / period) : std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<int> AffinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

}  // namespace

std::optional<std::string> ReadSelfMemoryStatus() {
  return linux_text::ReadKernelText("/proc/self/status");
}

bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::set<std::string> CpuFlags() {
  return linux_text::ParseCpuFlags(linux_text::ReadKernelText("/proc/cpuinfo").value_or(""));
}

std::optional<std::string> CpuModelName() {
  return linux_text::ParseCpuModelName(linux_text::ReadKernelText("/proc/cpuinfo").value_or(""));
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

int AllowedCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

std::string OsDescription() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine : "";
}

std::optional<double> CgroupCpuQuota(const std::string& self_cgroup,
                                     const std::filesystem::path& cgroup_root) {
  std::istringstream in(self_cgroup);
  std::string line, path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);  // the v2 hierarchy
  }
  if (path.empty()) return std::nullopt;
  std::optional<double> tightest;
  // The process's own cgroup, then each ancestor up to the root ("/a/b", "/a", "").
  for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
    if (const auto q = ReadCpuMax((cgroup_root.string() + p) + "/cpu.max")) {
      tightest = tightest ? std::min(*tightest, *q) : *q;
    }
    if (p.empty() || p == "/") break;
  }
  return tightest;
}

CpuTopology ReadCpuTopology() {
  CpuTopology t;
  t.allowed_cpus = AffinityCpus();
  for (const int cpu : t.allowed_cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const auto core = ReadInt(dir + "core_id");
    const auto package = ReadInt(dir + "physical_package_id");
    if (core && package) t.core_of[cpu] = {*package, *core};
  }
  t.cpu_quota = CgroupCpuQuota(linux_text::ReadKernelText("/proc/self/cgroup").value_or(""),
                               "/sys/fs/cgroup");
  return t;
}

}  // namespace ebb::platform
