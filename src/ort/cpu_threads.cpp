#include "ort/cpu_threads.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace ebb::internal {

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

int DefaultIntraOpThreads() {
  static const int n = PhysicalCoresFor(ReadCpuTopology());
  return n;
}

}  // namespace ebb::internal
