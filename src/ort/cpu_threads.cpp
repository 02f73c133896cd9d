#include "ort/cpu_threads.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

namespace ebb::internal {
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

}  // namespace

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

int PhysicalCoresFor(const CpuTopology& t) {
  std::set<std::pair<int, int>> cores;
  int without_topology = 0;
  for (const int cpu : t.allowed_cpus) {
    const auto it = t.core_of.find(cpu);
    if (it == t.core_of.end()) {
      ++without_topology;
    } else {
      cores.insert(it->second);
    }
  }
  int n = static_cast<int>(cores.size()) + without_topology;
  if (t.cpu_quota) n = std::min(n, static_cast<int>(std::ceil(*t.cpu_quota - 1e-9)));
  return std::max(1, n);
}

CpuTopology ReadCpuTopology() {
  CpuTopology t;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) t.allowed_cpus.push_back(cpu);
    }
  }
  for (const int cpu : t.allowed_cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const auto core = ReadInt(dir + "core_id");
    const auto package = ReadInt(dir + "physical_package_id");
    if (core && package) t.core_of[cpu] = {*package, *core};
  }
  std::ifstream self("/proc/self/cgroup");
  const std::string cgroup((std::istreambuf_iterator<char>(self)),
                           std::istreambuf_iterator<char>());
  t.cpu_quota = CgroupCpuQuota(cgroup, "/sys/fs/cgroup");
  return t;
}

int DefaultIntraOpThreads() {
  static const int n = PhysicalCoresFor(ReadCpuTopology());
  return n;
}

}  // namespace ebb::internal
