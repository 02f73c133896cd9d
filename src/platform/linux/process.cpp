// Linux implementation of platform/process.h.
#include "platform/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "platform/linux/proc_text.h"

namespace ebb::platform {
namespace {

// A kernel file's text; "" when it cannot be read (the parsers then find nothing).
std::string ReadSmallFile(const std::string& path) {
  return linux_text::ReadKernelText(path).value_or("");
}

int ToNative(ProcessSignal signal) {
  switch (signal) {
    case ProcessSignal::kInterrupt:
      return SIGINT;
    case ProcessSignal::kTerminate:
      return SIGTERM;
    case ProcessSignal::kKill:
      return SIGKILL;
  }
  return SIGTERM;
}

// The handler the stop signals reach (HandleStopSignals, ScopedStopSignals).
std::atomic<StopHandler> g_stop_handler{nullptr};
static_assert(std::atomic<StopHandler>::is_always_lock_free);

extern "C" void OnStopSignal(int sig) {
  if (StopHandler h = g_stop_handler.load()) {
    h(sig == SIGTERM ? ProcessSignal::kTerminate : ProcessSignal::kInterrupt);
  }
}

std::vector<char*> ArgvPointers(std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (auto& a : argv) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int64_t CurrentPid() { return static_cast<int64_t>(::getpid()); }

bool ProcessAlive(int64_t pid) {
  if (pid <= 0) return false;
  // Signal 0 checks existence and permission only; EPERM means it exists under another user.
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::optional<uint64_t> ProcessStartTime(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  return linux_text::ParseStatStartTime(ReadSmallFile("/proc/" + std::to_string(pid) + "/stat"));
}

std::string ProcessName(int64_t pid) {
  std::string name = ReadSmallFile("/proc/" + std::to_string(pid) + "/comm");
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

std::vector<std::string> SelfCommandLine() {
  return linux_text::SplitNulSeparated(ReadSmallFile("/proc/self/cmdline"));
}

std::filesystem::path SelfExecutable(std::error_code& ec) {
  return std::filesystem::read_symlink("/proc/self/exe", ec);
}

std::optional<std::filesystem::path> StdoutRegularFile() {
  std::error_code ec;
  const auto out = std::filesystem::read_symlink("/proc/self/fd/1", ec);
  if (!ec && out.is_absolute() && std::filesystem::is_regular_file(out, ec)) return out;
  return std::nullopt;
}

std::string HomeDirectory() {
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    return pw->pw_dir;
  }
  return "";
}

bool IsTerminal(StandardStream stream) {
  return isatty(fileno(stream == StandardStream::kStdout ? stdout : stderr)) != 0;
}

int SignalNumber(ProcessSignal signal) { return ToNative(signal); }

bool SendSignal(int64_t pid, ProcessSignal signal) {
  return ::kill(static_cast<pid_t>(pid), ToNative(signal)) == 0;
}

bool SignalIfSame(int64_t pid, ProcessSignal signal, const std::function<bool()>& still_same) {
#ifdef SYS_pidfd_open
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd >= 0) {
    bool ok = false;
    if (still_same()) {
      ok = ::syscall(SYS_pidfd_send_signal, pidfd, ToNative(signal), nullptr, 0) == 0;
    }
    ::close(pidfd);
    return ok;
  }
#endif
  return still_same() && ::kill(static_cast<pid_t>(pid), ToNative(signal)) == 0;
}

void IgnoreBrokenPipe() { std::signal(SIGPIPE, SIG_IGN); }

void HandleStopSignals(StopHandler handler) {
  g_stop_handler.store(handler);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
}

struct ScopedStopSignals::Saved {
  struct sigaction old_int {};
  struct sigaction old_term {};
  StopHandler old_handler = nullptr;
};

ScopedStopSignals::ScopedStopSignals(StopHandler handler) : saved_(new Saved) {
  saved_->old_handler = g_stop_handler.exchange(handler);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, &saved_->old_int);
  sigaction(SIGTERM, &sa, &saved_->old_term);
}

ScopedStopSignals::~ScopedStopSignals() {
  sigaction(SIGINT, &saved_->old_int, nullptr);
  sigaction(SIGTERM, &saved_->old_term, nullptr);
  g_stop_handler.store(saved_->old_handler);
  delete saved_;
}

int ExecReplace(const std::filesystem::path& exe, const std::vector<std::string>& argv) {
  std::vector<std::string> args = argv;
  std::vector<char*> ptrs = ArgvPointers(args);
  ::execv(exe.c_str(), ptrs.data());
  return errno;
}

SpawnResult SpawnDetached(const DetachedSpawn& spawn) {
  SpawnResult r;
  const int log_fd = ::open(spawn.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    r.error = errno;
    r.failed = SpawnResult::kOpenLog;
    return r;
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Everything the child touches is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = spawn.argv;
  std::vector<char*> argv = ArgvPointers(args);
  const std::string exe = spawn.exe.string();
  const std::string cwd = spawn.cwd.string();
  const std::string& cwd_msg = spawn.cwd_failure_line;
  const std::string& exec_msg = spawn.exec_failure_line;
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = errno;
    r.failed = SpawnResult::kStart;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return r;
  }
  if (pid == 0) {
    // The child: its own session, stdin from /dev/null, stdout and stderr to the log.
    ::setsid();
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      (void)!::write(log_fd, cwd_msg.data(), cwd_msg.size());
      ::_exit(126);
    }
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(exe.c_str(), argv.data());
    (void)!::write(2, exec_msg.data(), exec_msg.size());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  r.pid = pid;
  return r;
}

ChildState PollChild(int64_t pid, ChildExit* exit) {
  int status = 0;
  const pid_t r = ::waitpid(static_cast<pid_t>(pid), &status, WNOHANG);
  if (r == 0) return ChildState::kRunning;
  if (r != static_cast<pid_t>(pid)) return ChildState::kUnknown;
  if (exit != nullptr) {
    exit->exited = WIFEXITED(status);
    exit->status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    exit->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  return ChildState::kEnded;
}

void WaitChild(int64_t pid) { ::waitpid(static_cast<pid_t>(pid), nullptr, 0); }

std::optional<int64_t> FindTcpListener(int port) {
  std::vector<std::string> inodes =
      linux_text::ListeningInodes(ReadSmallFile("/proc/net/tcp"), port);
  for (auto& i : linux_text::ListeningInodes(ReadSmallFile("/proc/net/tcp6"), port)) {
    inodes.push_back(i);
  }
  if (inodes.empty()) return std::nullopt;
  std::vector<std::string> links;
  for (const auto& i : inodes) links.push_back("socket:[" + i + "]");
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return int64_t{0};
  int64_t found = 0;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // another user's process
    while (dirent* f = ::readdir(fds)) {
      char target[128];
      const std::string path = fd_dir + "/" + f->d_name;
      const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      for (const auto& l : links) {
        if (l == target) found = pid;
      }
      if (found != 0) break;
    }
    ::closedir(fds);
    if (found != 0) break;
  }
  ::closedir(proc);
  return found;
}

}  // namespace ebb::platform
