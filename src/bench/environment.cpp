#include "bench/environment.h"

#include <sched.h>
#include <sys/utsname.h>

#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "ebb/version.h"

#ifndef EBB_GIT_COMMIT
#define EBB_GIT_COMMIT "unknown"
#endif

namespace ebb::bench {

Environment ReadEnvironment() {
  Environment e;
  e.cpu_model = "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        e.cpu_model = line.substr(line.find_first_not_of(" \t", colon + 1));
      }
      break;
    }
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  e.num_cores = sched_getaffinity(0, sizeof(set), &set) == 0
                    ? CPU_COUNT(&set)
                    : static_cast<int>(std::thread::hardware_concurrency());
  utsname u{};
  e.os = uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine : "unknown";
  e.ort_version = OrtVersion();
  e.cpu_kernels = CpuKernels();
  e.ebb_version = Version();
  e.ebb_git_commit = EBB_GIT_COMMIT;
  if (e.ebb_git_commit.empty()) e.ebb_git_commit = "unknown";
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  e.created_utc = buf;
  return e;
}

}  // namespace ebb::bench
