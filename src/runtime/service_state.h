// The state directory of `ebb service` and its files: the contract between the service, the
// `ebb service` commands and every other client that looks for the running service
// (docs/service.md, "The state directory").
//
//   dir = $EBB_HOME, else $XDG_STATE_HOME/ebb, else ~/.local/state/ebb
//   dir/service.json  written atomically (temp file + rename) by `ebb serve --state-dir DIR`
//                     once it listens; removed by it on a clean exit
//   dir/service.log   stdout and stderr of a service started by `ebb service start`
//   dir/service.lock  flock()ed by the `ebb service` commands that change the state
//
// A service.json whose pid is gone, or whose pid now belongs to another process (its
// /proc/PID/stat start time differs), is stale: it does not describe a running service, and the
// process behind a reused pid is never signalled.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "platform/file.h"

namespace ebb::internal {

// What service.json holds (all fields always written; `cwd` may be absent when read).
struct ServiceState {
  int pid = 0;
  // Field 22 of /proc/PID/stat: the process start time in clock ticks after boot. With the pid it
  // identifies the process: a recycled pid has another start time.
  uint64_t start_time = 0;
  std::string url;   // where clients connect: "http://127.0.0.1:11435" (a wildcard host maps to
                     // loopback; an IPv6 host is bracketed)
  std::string host;  // the bound address, as given to --host
  int port = 0;
  std::string log;  // absolute path of the file the service's stdout goes to; "" when it is not a
                    // regular file (--foreground: the terminal or the journal)
  std::vector<std::string> args;  // the `ebb serve` flags it runs with, without --state-dir
  std::string cwd;  // its working directory, against which relative paths in `args` resolve
                    // (an addition to the fields above; "" when absent)
  int64_t started_unix_ms = 0;  // wall clock when it started listening
};

// The state directory from the environment (see above). Not created.
std::filesystem::path ServiceStateDir();
// Creates `dir` (mode 0700) if needed; throws ebb::Error naming it when that fails.
void EnsureServiceStateDir(const std::filesystem::path& dir);
std::filesystem::path ServiceStateFile(const std::filesystem::path& dir);  // dir/service.json
std::filesystem::path ServiceLogFile(const std::filesystem::path& dir);    // dir/service.log
std::filesystem::path ServiceLockFile(const std::filesystem::path& dir);   // dir/service.lock

// The start time (field 22 of /proc/PID/stat) of a live process; nullopt when there is no such
// process or it is a zombie (it has exited; only its exit status is left to collect).
std::optional<uint64_t> ProcessStartTime(int pid);
// The command name of a process (/proc/PID/comm), "" when unknown.
std::string ProcessName(int pid);

// The service.json text of `s` and its parse. ParseServiceState throws ebb::Error
// (InvalidArgument) naming `source` and the bad field.
std::string ServiceStateJson(const ServiceState& s);
ServiceState ParseServiceState(const std::string& text, const std::string& source);

enum class Liveness {
  kRunning,    // the pid is alive with the recorded start time: this is the service
  kGone,       // no such process (or a zombie): it exited or was killed
  kPidReused,  // the pid is alive but is another process (different start time)
};
Liveness CheckLiveness(const ServiceState& s);

// dir/service.json as written, live or stale; nullopt when there is none. Throws ebb::Error
// (InvalidArgument) when it exists but cannot be read or parsed, naming the file.
std::optional<ServiceState> ReadServiceStateFile(const std::filesystem::path& dir);

// The running service of `dir`: its state only if the recorded pid is alive AND has the recorded
// start time. nullopt when there is no service.json, when it is stale or unreadable. Never
// throws; does not modify the directory. What `ebb ps`, `ebb model …` and `ebb.connect()` use
// to find the service.
std::optional<ServiceState> ReadRunningService(const std::filesystem::path& dir);
std::optional<ServiceState> ReadRunningService();  // of ServiceStateDir()

// Writes dir/service.json atomically: a temp file in `dir`, fsync, rename over the old one.
// Throws ebb::Error naming the file on failure.
void WriteServiceState(const std::filesystem::path& dir, const ServiceState& s);
// Removes dir/service.json if it records `pid` (a newer service's file is left alone). Returns
// whether it removed it. Never throws.
bool RemoveServiceStateOf(const std::filesystem::path& dir, int pid);
// Removes dir/service.json whatever it holds. Never throws.
void RemoveServiceState(const std::filesystem::path& dir);

// The `ebb serve` flags of this process, from /proc/self/cmdline: the arguments after the
// first "serve", without --state-dir and its value. What service.json records as `args`.
std::vector<std::string> ServeArgsOfThisProcess();

// The URL clients use for a service bound to host:port (see ServiceState::url).
std::string ServiceUrl(const std::string& host, int port);

// An exclusive lock (flock() on Linux: platform/file.h FileLock) on dir/service.lock for the
// lifetime of the object: the `ebb service` commands that start or stop take it, so two of them do
// not race. Blocks while another holds it. The descriptor is close-on-exec, so a started service
// does not inherit the lock.
class ServiceLock {
 public:
  explicit ServiceLock(const std::filesystem::path& dir);
  ~ServiceLock();
  ServiceLock(const ServiceLock&) = delete;
  ServiceLock& operator=(const ServiceLock&) = delete;

 private:
  platform::FileLock lock_;
};

// The value of `name` among `ebb serve` flags ("--port 8080" or "--port=8080"); the last wins.
std::optional<std::string> ServeFlagValue(const std::vector<std::string>& args,
                                          const std::string& name);
// The API key a client of the service needs: its --api-key, its --api-key-file (relative to its
// cwd), or $EBB_API_KEY (which the service inherited when this user started it); "" for none.
std::string ServiceApiKey(const ServiceState& s);

}  // namespace ebb::internal
