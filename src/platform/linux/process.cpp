// Linux implementation of platform/process.h.
#include "platform/process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace ebb::platform {

int64_t CurrentPid() { return static_cast<int64_t>(::getpid()); }

bool ProcessAlive(int64_t pid) {
  if (pid <= 0) return false;
  // Signal 0 checks existence and permission only; EPERM means it exists under another user.
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace ebb::platform
