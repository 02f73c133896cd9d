// platform/process: this process and others, by pid: identity (start time, name, command line,
// executable), signals, terminals, starting a detached child, and who listens on a TCP port.
// Part of the platform seam (band 0, docs/architecture.md "The platform seam"): the only folder
// that calls the operating system directly. Nothing here throws; failures are reported as values
// (errno-style codes, empty results or std::nullopt) for the caller to turn into an ebb::Error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace ebb::platform {

// This process's id.
int64_t CurrentPid();

// Whether a process with this pid exists (it may belong to another user). False for pid <= 0.
bool ProcessAlive(int64_t pid);

// The start time of a live process in clock ticks after boot (Linux: field 22 of
// /proc/PID/stat). With the pid it identifies the process: a recycled pid has another start
// time. nullopt when there is no such process, pid <= 0, or it is a zombie (it has exited; only
// its exit status is left to collect).
std::optional<uint64_t> ProcessStartTime(int64_t pid);

// The command name of a process (Linux: /proc/PID/comm, at most 15 bytes), "" when unknown.
std::string ProcessName(int64_t pid);

// This process's command line, argv[0] first; empty when unknown.
std::vector<std::string> SelfCommandLine();

// The absolute path of this process's executable; `ec` says why when it cannot be found.
std::filesystem::path SelfExecutable(std::error_code& ec);

// The regular file this process's standard output writes to (an absolute path), nullopt when it
// goes elsewhere (a terminal, a pipe, the journal's socket) or cannot be told.
std::optional<std::filesystem::path> StdoutRegularFile();

// The home folder of this process's user from the user database (not $HOME); "" when unknown.
std::string HomeDirectory();

enum class StandardStream { kStdout, kStderr };
// Whether the stream is a terminal (progress lines are redrawn there).
bool IsTerminal(StandardStream stream);

// --- Signals -------------------------------------------------------------------------------

enum class ProcessSignal {
  kInterrupt,  // SIGINT: Ctrl-C
  kTerminate,  // SIGTERM: stop cleanly
  kKill,       // SIGKILL: cannot be caught
};

// The signal's number, for the shell's exit status convention (128 + number: 130, 143).
int SignalNumber(ProcessSignal signal);

// Sends `signal` to `pid`. False when the process does not exist or may not be signalled.
bool SendSignal(int64_t pid, ProcessSignal signal);

// Sends `signal` to `pid` only while `still_same()` says it is still the same process, without
// a window for a pid reuse where the system allows (Linux >= 5.3: a pidfd is opened first, then
// `still_same()` asked, then the signal sent through the pidfd); elsewhere `still_same()` and the
// signal are microseconds apart. False when `still_same()` says no or the signal failed.
bool SignalIfSame(int64_t pid, ProcessSignal signal, const std::function<bool()>& still_same);

// A writes to a pipe or socket whose reader went away fails with EPIPE instead of killing the
// process (SIGPIPE ignored), for the rest of the process's life.
void IgnoreBrokenPipe();

// Called in signal context with kInterrupt (SIGINT) or kTerminate (SIGTERM): it may only touch
// lock-free atomics.
using StopHandler = void (*)(ProcessSignal);

// From now on SIGINT and SIGTERM call `handler` (each time; interrupted system calls restart),
// for the rest of the process's life.
void HandleStopSignals(StopHandler handler);

// While it lives, SIGINT and SIGTERM call `handler`; a second signal of the same kind gets the
// default action (the process ends), so a stuck process can still be interrupted. The previous
// handling is restored when it ends. One at a time per process.
class ScopedStopSignals {
 public:
  explicit ScopedStopSignals(StopHandler handler);
  ~ScopedStopSignals();
  ScopedStopSignals(const ScopedStopSignals&) = delete;
  ScopedStopSignals& operator=(const ScopedStopSignals&) = delete;

 private:
  struct Saved;
  Saved* saved_;  // owned: the previous handling
};

// --- Child processes -----------------------------------------------------------------------

// Replaces this process with `exe` run with `argv` (argv[0] first); returns only on failure,
// with its errno.
int ExecReplace(const std::filesystem::path& exe, const std::vector<std::string>& argv);

// A child started in its own session (no controlling terminal, outside the caller's process
// group, so the terminal's Ctrl-C and hang-up do not reach it), stdin from the null device,
// stdout and stderr appended to `log` (created with mode 0600).
struct DetachedSpawn {
  std::filesystem::path exe;
  std::vector<std::string> argv;  // argv[0] first
  std::filesystem::path log;
  std::filesystem::path cwd;      // the child's working folder; empty: this process's
  std::string cwd_failure_line;   // written to the log when the child cannot enter `cwd`
  std::string exec_failure_line;  // written to the log when the child cannot run `exe`
};

struct SpawnResult {
  int64_t pid = -1;  // the child, when `error` is 0
  int error = 0;     // errno of the failing step
  enum Step { kNone, kOpenLog, kStart } failed = kNone;
};

// Starts the child (above). A child that cannot enter `cwd` exits with status 126, one that
// cannot run `exe` with 127, each after writing its line to the log.
SpawnResult SpawnDetached(const DetachedSpawn& spawn);

// How a child ended.
struct ChildExit {
  bool exited = false;  // it exited with `status`; else it was killed by `signal`
  int status = 0;
  int signal = 0;
};

// Whether a child of this process has ended, without waiting: kEnded fills `exit` and collects
// it (the pid is then free for reuse); kUnknown: not a child of this process (or already
// collected).
enum class ChildState { kRunning, kEnded, kUnknown };
ChildState PollChild(int64_t pid, ChildExit* exit);

// Waits for a child of this process to end and collects it.
void WaitChild(int64_t pid);

// --- Who listens on a port -----------------------------------------------------------------

// The process listening on TCP `port` (any local address, IPv4 or IPv6): nullopt when no
// listening socket on that port is visible; 0 when the socket is visible but not its process
// (another user's, or in another namespace); else its pid. Linux: /proc/net/tcp{,6} and the
// socket links under /proc/*/fd.
std::optional<int64_t> FindTcpListener(int port);

}  // namespace ebb::platform
