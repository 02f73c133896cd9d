#include "bench/environment.h"

#include <ctime>
#include <string>
#include <thread>

#include "ebb/version.h"
#include "platform/system_info.h"

#ifndef EBB_GIT_COMMIT
#define EBB_GIT_COMMIT "unknown"
#endif

namespace ebb::bench {

Environment ReadEnvironment() {
  Environment e;
  e.cpu_model = platform::CpuModelName().value_or("unknown");
  const int allowed = platform::AllowedCpuCount();
  e.num_cores = allowed > 0 ? allowed : static_cast<int>(std::thread::hardware_concurrency());
  e.os = platform::OsDescription();
  if (e.os.empty()) e.os = "unknown";
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
