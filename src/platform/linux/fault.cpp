// Linux implementation of platform/fault.h: a SIGBUS handler (SA_SIGINFO | SA_ONSTACK) that
// asks the installed FileFaultHandler first and chains to the previous handler otherwise.
#include "platform/fault.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace ebb::platform {
namespace {

std::atomic<FileFaultHandler> g_handler{nullptr};  // written before ours is installed
struct sigaction g_previous {};  // the handler before ours; written before ours is installed
std::mutex g_install_mu;
bool g_installed = false;  // guarded by g_install_mu

// SIG_DFL again, then: a fault repeats when the handler returns and takes the default action
// (a core dump of the real fault); a signal sent with kill() is sent again.
void DefaultAction(int sig, const siginfo_t* info) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(sig);
}

void Chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
    DefaultAction(sig, info);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN) {
    // The kernel does not let a fault be ignored: it would repeat forever. kill() is ignored.
    if (info != nullptr && info->si_code > 0) DefaultAction(sig, info);
    return;
  }
  if (g_previous.sa_handler == SIG_DFL) {
    DefaultAction(sig, info);
    return;
  }
  g_previous.sa_handler(sig);
}

// Async-signal-safe: atomics, the handler (async-signal-safe by contract), sigaction and raise
// only; errno is preserved.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  bool absorbed = false;
  if (info != nullptr && info->si_code > 0) {  // raised by the kernel for an access
    const FileFaultHandler handler = g_handler.load();
    if (handler != nullptr) absorbed = handler(reinterpret_cast<uintptr_t>(info->si_addr));
  }
  if (!absorbed) Chain(sig, info, context);
  errno = saved_errno;
}

}  // namespace

int InstallFileFaultHandler(FileFaultHandler handler) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_installed) return 0;
  if (sigaction(SIGBUS, nullptr, &g_previous) != 0) return errno;
  g_handler.store(handler);
  struct sigaction sa {};
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, nullptr) != 0) return errno;
  g_installed = true;
  return 0;
}

}  // namespace ebb::platform
