// Linux implementation of platform/thread.h.
#include "platform/thread.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ebb::platform {

int LowerThreadPriority() {
  // Linux applies nice per thread: PRIO_PROCESS with a thread id changes that thread alone.
  return ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19) == 0 ? 0 : errno;
}

}  // namespace ebb::platform
