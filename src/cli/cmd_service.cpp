// `ebb service start|stop|restart|status`: one background `ebb serve` per state directory
// (docs/service.md). The service itself writes service.json (cmd_serve.cpp, --state-dir); these
// commands start it detached, signal it, and clean up after it when it crashed or hung.
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/port_probe.h"
#include "cli/service_names.h"
#include "core/files.h"
#include "core/strings.h"
#include "platform/file.h"
#include "platform/process.h"

namespace ebb::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;
using internal::EscapeForMessage;
using internal::FormatBytes;
using internal::OneLine;

constexpr int kDefaultPort = 11435;
// After SIGTERM, the service gets its drain timeout plus this margin (seconds) to exit: the
// margin covers stopping the HTTP server and unloading models after the drain.
constexpr int kStopMarginS = 5;
// A log over this size is moved to service.log.1 when a service starts (one old log kept).
constexpr uint64_t kMaxLogBytes = 16ull << 20;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void Say(const std::string& line) { std::cout << "ebb service: " << line << std::endl; }

// The value of the last `--name V` or `--name=V` in serve flags.

struct Address {
  std::string host = "127.0.0.1";
  int port = kDefaultPort;
};

// Where a service with these serve flags listens. It needs a known port: 0 is refused.
Address AddressOf(const std::vector<std::string>& args) {
  Address a;
  if (auto h = ServeFlagValue(args, "--host")) a.host = *h;
  if (auto p = ServeFlagValue(args, "--port")) {
    int port = -1;
    try {
      size_t used = 0;
      port = std::stoi(*p, &used);
      if (used != p->size()) port = -1;
    } catch (const std::exception&) {
    }
    if (port == 0) {
      throw Error(ErrorCode::InvalidArgument,
                  "ebb service needs a known port and --port 0 picks any: give --port N (1 to "
                  "65535; default 11435)");
    }
    if (port < 1 || port > 65535) {
      throw Error(ErrorCode::InvalidArgument,
                  "--port '" + *p + "' is not a port: use 1 to 65535 (default 11435)");
    }
    a.port = port;
  }
  return a;
}

// Whether a file in `dir` can be written: "" when it can, else why (the errno of a probe that
// writes one block and syncs it: "No space left on device" on a full file system, a quota, a
// read-only mount). What ebb serve met, when it died with nothing in its log.
std::string WriteProbe(const fs::path& dir) {
  const fs::path probe = dir / (".ebb-write-probe-" + std::to_string(platform::CurrentPid()));
  const int err = platform::ProbeWrite(probe, 4096);
  return err == 0 ? std::string() : internal::DescribeErrno(err);
}

// The last `max_lines` lines of `log` written at or after byte `from`, indented, for messages.
std::string LogTail(const fs::path& log, uint64_t from, size_t max_lines = 15) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return "  (no log at " + log.string() + ")";
  in.seekg(static_cast<std::streamoff>(from));
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  if (lines.empty()) {
    // ebb serve writes its reason to the log before it exits; an empty log is most often one it
    // could not write (a full disk), which the same write here shows with its errno.
    if (const std::string why = WriteProbe(log.parent_path()); !why.empty()) {
      return "  (the log is empty: writing to " + log.parent_path().string() + " fails with '" +
             why +
             "': ebb serve could not write its log there, nor, most likely, its state file; "
             "free space there (or set $EBB_HOME to another folder) and start again)";
    }
    return "  (the log is empty)";
  }
  std::string out;
  for (const auto& l : lines) out += "  | " + EscapeForMessage(l, 400) + "\n";
  out.pop_back();
  return out;
}

// GET `path` of the service at `url`; nullopt when it does not answer within `timeout`.
std::optional<httplib::Result> Get(const std::string& url, const std::string& path,
                                   std::chrono::milliseconds timeout,
                                   const std::string& api_key = "") {
  httplib::Client c(url);
  c.set_connection_timeout(timeout);
  c.set_read_timeout(timeout);
  c.set_write_timeout(timeout);
  httplib::Headers h;
  if (!api_key.empty()) h.emplace("Authorization", "Bearer " + api_key);
  auto r = c.Get(path, h);
  if (!r) return std::nullopt;
  return r;
}

// Signals the process of `s` only while it is still the same process (pid and start time).
// With pidfd_open the check and the signal cannot be split by a pid reuse; without it (old
// kernels) the window is the microseconds between the /proc read and kill()
// (platform::SignalIfSame).
bool SignalService(const ServiceState& s, platform::ProcessSignal sig) {
  return platform::SignalIfSame(s.pid, sig,
                                [&s] { return CheckLiveness(s) == Liveness::kRunning; });
}

// Waits up to `seconds` for the process of `s` to be gone; returns whether it is.
bool WaitGone(const ServiceState& s, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (CheckLiveness(s) == Liveness::kRunning) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The state file of `dir`; an unreadable one is removed (with a message) and reads as none.
std::optional<ServiceState> ReadStateOrRemoveUnreadable(const fs::path& dir) {
  try {
    return ReadServiceStateFile(dir);
  } catch (const Error& e) {
    RemoveServiceState(dir);
    Say(std::string("removed an unreadable state file: ") + e.what());
    return std::nullopt;
  }
}

// Stops the service of `dir`, or cleans up its stale state. `drain_timeout_s`: how long the
// service may drain before SIGKILL (plus kStopMarginS); nullopt: its own --drain-timeout (30 s
// by default). Returns whether a live service was stopped. Caller holds the ServiceLock.
bool StopService(const fs::path& dir, std::optional<int> drain_timeout_s) {
  const fs::path file = ServiceStateFile(dir);
  const std::optional<ServiceState> st = ReadStateOrRemoveUnreadable(dir);
  if (!st) {
    Say("not running (no " + file.string() + ")");
    return false;
  }
  switch (CheckLiveness(*st)) {
    case Liveness::kGone:
      RemoveServiceState(dir);
      Say("pid " + std::to_string(st->pid) +
          " is gone (the service crashed or was killed); removed its stale " + file.string());
      return false;
    case Liveness::kPidReused: {
      const std::string name = ProcessName(st->pid);
      RemoveServiceState(dir);
      Say("pid " + std::to_string(st->pid) + " now belongs to another process (" +
          (name.empty() ? "unknown" : name) + ", started after the service); removed the stale " +
          file.string() + " and left that process alone");
      return false;
    }
    case Liveness::kRunning:
      break;
  }
  int drain = 30;
  if (drain_timeout_s) {
    drain = *drain_timeout_s;
  } else if (auto v = ServeFlagValue(st->args, "--drain-timeout")) {
    try {
      drain = std::stoi(*v);
    } catch (const std::exception&) {
    }
  }
  const auto t0 = Clock::now();
  Say("stopping pid " + std::to_string(st->pid) + " at " + st->url +
      " (SIGTERM; running requests get up to " + std::to_string(drain) + " s)");
  SignalService(*st, platform::ProcessSignal::kTerminate);
  if (!WaitGone(*st, drain + kStopMarginS)) {
    Say("pid " + std::to_string(st->pid) + " did not exit within " +
        std::to_string(drain + kStopMarginS) + " s of SIGTERM (hung or stopped); sending SIGKILL");
    SignalService(*st, platform::ProcessSignal::kKill);
    if (!WaitGone(*st, 10)) {
      throw Error(ErrorCode::Unavailable,
                  "pid " + std::to_string(st->pid) +
                      " is still alive 10 s after SIGKILL (stuck in the kernel, e.g. on a "
                      "device or network file system); look at /proc/" +
                      std::to_string(st->pid) + "/stack and retry `ebb service stop`");
    }
  }
  RemoveServiceStateOf(dir, st->pid);  // a killed service could not remove it itself
  // A killed server's thread-group leader shows as exited (zombie) while its other threads still
  // tear down, and its listening socket closes only with the last of them (seen under ASan, whose
  // teardown is slow): stop returns once the port is free again (at most 10 s), so that a start
  // right after it binds.
  const auto port_deadline = Clock::now() + std::chrono::seconds(10);
  while (!ProbeListen(st->host, st->port).empty() && Clock::now() < port_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  char took[32];
  std::snprintf(took, sizeof(took), "%.1f", SecondsSince(t0));
  Say("stopped pid " + std::to_string(st->pid) + " in " + took + " s");
  return true;
}

// Progress while `ebb service start` waits for /ready (stderr): a redrawn line on a terminal,
// plain lines otherwise (one at the start, then one every 10 s).
class ReadyProgress {
 public:
  ReadyProgress(int pid, std::string url, std::string log)
      : tty_(platform::IsTerminal(platform::StandardStream::kStderr)),
        pid_(pid),
        url_(std::move(url)),
        log_(std::move(log)) {
    if (!tty_) {
      std::cerr << "ebb service: started pid " << pid_ << ", waiting for " << url_
                << "/ready (log: " << log_ << ")" << std::endl;
    }
  }
  void Tick(double elapsed_s) {
    if (tty_) {
      static const char* kSpin[] = {"|", "/", "-", "\\"};
      std::fprintf(stderr, "\r%s waiting for %s/ready (pid %d) %.1fs ", kSpin[ticks_++ % 4],
                   url_.c_str(), pid_, elapsed_s);
      std::fflush(stderr);
    } else if (elapsed_s >= next_line_s_) {
      std::cerr << "ebb service: still waiting for /ready (" << static_cast<int>(elapsed_s) << " s)"
                << std::endl;
      next_line_s_ += 10;
    }
  }
  ~ReadyProgress() {
    if (tty_) std::fprintf(stderr, "\r\033[K");  // clear the progress line
  }

 private:
  bool tty_;
  int pid_;
  std::string url_;
  std::string log_;
  unsigned ticks_ = 0;
  double next_line_s_ = 10;
};

// Moves a large log aside; returns the size of the log the new service appends to.
uint64_t PrepareLog(const fs::path& log) {
  std::error_code ec;
  const auto size = fs::file_size(log, ec);
  if (ec) return 0;
  if (size > kMaxLogBytes) {
    fs::rename(log, fs::path(log.string() + ".1"), ec);
    if (!ec) return 0;
  }
  return size;
}

// Starts `ebb serve ARGS --state-dir DIR` detached (or, with `foreground`, in place of this
// process) and waits until it answers /ready. `cwd`: the server's working directory (relative
// paths in `args` resolve against it); "": this process's. Caller holds the ServiceLock.
void StartService(const fs::path& dir, const std::vector<std::string>& args, bool foreground,
                  int ready_timeout_s, const std::string& cwd = "") {
  const Address addr = AddressOf(args);
  const std::string url = ServiceUrl(addr.host, addr.port);
  if (const std::optional<ServiceState> st = ReadStateOrRemoveUnreadable(dir)) {
    switch (CheckLiveness(*st)) {
      case Liveness::kRunning:
        throw Error(ErrorCode::FailedPrecondition,
                    "ebb service is already running at " + st->url + " (pid " +
                        std::to_string(st->pid) +
                        "); `ebb service restart [flags]` restarts it, `ebb service stop` "
                        "stops it");
      case Liveness::kGone:
        Say("removed a stale state file: pid " + std::to_string(st->pid) + " is gone");
        break;
      case Liveness::kPidReused:
        Say("removed a stale state file: pid " + std::to_string(st->pid) +
            " now belongs to another process (left alone)");
        break;
    }
    RemoveServiceState(dir);
  }
  if (const std::string why = ProbeListen(addr.host, addr.port); !why.empty()) {
    throw Error(ErrorCode::Unavailable,
                "cannot start the service: " + DescribePortProblem(addr.host, addr.port, why) +
                    "; stop that program or give another --port");
  }

  std::error_code ec;
  const fs::path self = platform::SelfExecutable(ec);
  if (ec) {
    throw Error(ErrorCode::Internal,
                "cannot find the ebb executable (/proc/self/exe): " + ec.message());
  }
  std::vector<std::string> argv_s = {"ebb", "serve", "--state-dir", dir.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());

  if (foreground) {
    // systemd (or a terminal) owns this process: become `ebb serve` with the same pid.
    std::cout.flush();
    std::fflush(nullptr);
    const int err = platform::ExecReplace(self, argv_s);
    throw Error(ErrorCode::Internal,
                "cannot run " + self.string() + " serve: " + internal::DescribeErrno(err));
  }

  const fs::path log = ServiceLogFile(dir);
  const uint64_t log_from = PrepareLog(log);
  // The child: its own session (no controlling terminal, not in the caller's process group, so
  // the terminal's Ctrl-C and hang-up do not reach it), stdin from /dev/null, stdout and stderr
  // to the log.
  platform::DetachedSpawn spawn;
  spawn.exe = self;
  spawn.argv = argv_s;
  spawn.log = log;
  spawn.cwd = cwd;
  spawn.cwd_failure_line = "ebb service: cannot enter the service's recorded working directory\n";
  spawn.exec_failure_line = "ebb service: cannot exec ebb serve\n";
  std::cout.flush();
  std::fflush(nullptr);
  const platform::SpawnResult started = platform::SpawnDetached(spawn);
  if (started.failed == platform::SpawnResult::kOpenLog) {
    throw Error(ErrorCode::FailedPrecondition, "cannot open the log " + log.string() + ": " +
                                                   internal::DescribeErrno(started.error));
  }
  if (started.failed != platform::SpawnResult::kNone) {
    throw Error(ErrorCode::Unavailable,
                "cannot start a process (fork): " + internal::DescribeErrno(started.error));
  }
  const int pid = static_cast<int>(started.pid);

  const auto t0 = Clock::now();
  bool ready = false;
  std::string died;  // how the child ended, when it did before it was ready
  {
    ReadyProgress progress(pid, url, log.string());
    while (!ready) {
      platform::ChildExit exit;
      if (platform::PollChild(pid, &exit) == platform::ChildState::kEnded) {
        died = exit.exited ? "exited with status " + std::to_string(exit.status)
                           : "was killed by signal " + std::to_string(exit.signal);
        break;
      }
      std::optional<ServiceState> now;
      try {
        now = ReadServiceStateFile(dir);
      } catch (const std::exception&) {
        // being replaced, or not written yet
      }
      if (now && now->pid == pid) {
        auto r = Get(now->url, "/ready", std::chrono::milliseconds(1000));
        ready = r && (*r)->status == 200;
      }
      if (ready || SecondsSince(t0) > ready_timeout_s) break;
      progress.Tick(SecondsSince(t0));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!died.empty()) {
    RemoveServiceStateOf(dir, pid);
    throw Error(ErrorCode::Unavailable, "ebb serve (pid " + std::to_string(pid) + ") " + died +
                                            " before it was ready; the end of " + log.string() +
                                            ":\n" + LogTail(log, log_from));
  }
  if (!ready) {
    // Do not leave a half-started service behind: stop it, then say why.
    platform::SendSignal(pid, platform::ProcessSignal::kTerminate);
    for (int i = 0; i < 40 && platform::PollChild(pid, nullptr) == platform::ChildState::kRunning;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (platform::PollChild(pid, nullptr) == platform::ChildState::kRunning) {
      platform::SendSignal(pid, platform::ProcessSignal::kKill);
      platform::WaitChild(pid);
    }
    RemoveServiceStateOf(dir, pid);
    throw Error(ErrorCode::DeadlineExceeded,
                "ebb serve (pid " + std::to_string(pid) + ") did not answer " + url +
                    "/ready within " + std::to_string(ready_timeout_s) +
                    " s, so it was stopped; raise --ready-timeout, or look at the end of " +
                    log.string() + ":\n" + LogTail(log, log_from));
  }
  Say("running at " + url + " (pid " + std::to_string(pid) + ", log " + log.string() + ")");
}

std::string FormatUptime(double seconds) {
  auto s = static_cast<int64_t>(seconds);
  char buf[64];
  if (s >= 86400) {
    std::snprintf(buf, sizeof(buf), "%lldd %02lldh %02lldm", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60));
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh %02lldm %02llds", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldm %02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

uint64_t U64(const Json& j, std::initializer_list<const char*> path) {
  const Json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return 0;
    p = &(*p)[k];
  }
  return p->is_number_unsigned() || p->is_number_integer() ? p->get<uint64_t>() : 0;
}

// `ebb service status`: exit 0 when running and answering, 1 when running but not answering,
// 3 when not running (as systemctl and LSB init scripts do).
void Status(const fs::path& dir, bool json) {
  std::optional<ServiceState> file;
  std::string problem;
  try {
    file = ReadServiceStateFile(dir);
  } catch (const Error& e) {
    problem = e.what();
  }
  const auto st = ReadRunningService(dir);
  if (!st) {
    if (file) {
      problem = "stale " + ServiceStateFile(dir).string() + ": pid " + std::to_string(file->pid) +
                (CheckLiveness(*file) == Liveness::kGone ? " is gone"
                                                         : " belongs to another process now") +
                "; `ebb service stop` cleans it up";
    }
    if (json) {
      Json j = {{"running", false}, {"state_dir", dir.string()}};
      if (!problem.empty()) j["problem"] = problem;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "ebb service: not running (state directory " << dir.string() << ")\n";
      if (!problem.empty()) std::cout << "  " << problem << "\n";
    }
    throw ExitStatus{3};
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const double uptime_s = static_cast<double>(now_ms - st->started_unix_ms) / 1000.0;
  Json runtime;  // null when the service does not answer
  std::string error;
  if (auto r = Get(st->url, "/v1/runtime", std::chrono::milliseconds(5000), ServiceApiKey(*st));
      !r) {
    error = "does not answer " + st->url + "/v1/runtime within 5 s (hung, stopped, or busy)";
  } else if ((*r)->status != 200) {
    error = "GET /v1/runtime answered " + std::to_string((*r)->status) + ": " +
            OneLine((*r)->body).substr(0, 300);
  } else {
    try {
      runtime = Json::parse((*r)->body);
    } catch (const std::exception&) {
      error = "GET /v1/runtime did not answer JSON";
    }
  }
  if (json) {
    Json j = {{"running", true},
              {"answering", error.empty()},
              {"pid", st->pid},
              {"url", st->url},
              {"host", st->host},
              {"port", st->port},
              {"log", st->log},
              {"args", st->args},
              {"started_unix_ms", st->started_unix_ms},
              {"uptime_s", uptime_s},
              {"state_dir", dir.string()},
              {"runtime", runtime}};
    if (!error.empty()) j["error"] = error;
    std::cout << j.dump(2) << "\n";
    if (!error.empty()) throw ExitStatus{1};
    return;
  }
  std::cout << "ebb service: running" << (error.empty() ? "" : ", NOT ANSWERING") << "\n"
            << "  address   " << st->url << "\n"
            << "  pid       " << st->pid << "\n"
            << "  uptime    " << FormatUptime(uptime_s) << "\n"
            << "  log       " << (st->log.empty() ? "(stdout: --foreground)" : st->log) << "\n"
            << "  state     " << ServiceStateFile(dir).string() << "\n";
  if (!error.empty()) {
    std::cout << "  problem   " << error << "\n";
    throw ExitStatus{1};
  }
  const uint64_t limit = U64(runtime, {"stats", "limit_bytes"});
  std::cout << "  memory    RSS " << FormatBytes(U64(runtime, {"stats", "process", "rss_bytes"}))
            << ", weights " << FormatBytes(U64(runtime, {"stats", "weights_bytes"})) << ", KV "
            << FormatBytes(U64(runtime, {"stats", "kv", "in_use_bytes"})) << " in use"
            << (limit > 0 ? ", limit " + FormatBytes(limit) : std::string(", no limit")) << "\n"
            << "  requests  " << U64(runtime, {"queue", "running"}) << " running, "
            << U64(runtime, {"queue", "queued"}) << " queued, "
            << U64(runtime, {"requests", "completed"}) << " completed, "
            << U64(runtime, {"requests", "error"}) << " failed\n";
  int loaded = 0, known = 0;
  for (const auto& m : runtime.value("models", Json::array())) {
    ++known;
    if (m.value("loaded", false)) ++loaded;
  }
  std::cout << "  models    " << loaded << " loaded of " << known << " known\n";
  if (loaded > 0) {
    std::printf("    %-28s %10s %10s %10s %10s %7s\n", "MODEL", "WEIGHTS", "KV USED", "KV RESERV",
                "ARENA", "RUNNING");
    std::fflush(stdout);
    for (const auto& m : runtime.value("models", Json::array())) {
      if (!m.is_object() || !m.value("loaded", false)) continue;
      std::printf("    %-28s %10s %10s %10s %10s %7llu\n", m.value("id", "").c_str(),
                  FormatBytes(U64(m, {"weights_bytes"})).c_str(),
                  FormatBytes(U64(m, {"kv", "in_use_bytes"})).c_str(),
                  FormatBytes(U64(m, {"kv", "reserved_bytes"})).c_str(),
                  FormatBytes(U64(m, {"cpu_arena", "total_allocated_bytes"})).c_str(),
                  static_cast<unsigned long long>(U64(m, {"running"})));
    }
    std::fflush(stdout);
  }
}

struct ServiceFlags {
  bool foreground = false;
  int ready_timeout_s = 60;
  std::optional<int> drain_timeout_s;
  bool json = false;
};

void CheckSeconds(const std::optional<int>& v, const char* flag) {
  if (v && *v < 0) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(flag) + " must be 0 or more seconds, not " + std::to_string(*v));
  }
}

}  // namespace

void RegisterServiceCommand(CLI::App& app) {
  auto f = std::make_shared<ServiceFlags>();
  CLI::App* svc = app.add_subcommand(
      "service",
      "Run `ebb serve` in the background: start, stop, restart, status (docs/service.md)");
  svc->require_subcommand(1);

  CLI::App* start = svc->add_subcommand(
      "start",
      "Start `ebb serve` detached with these serve flags (e.g. --models-dir DIR --port N) and "
      "wait until it is ready");
  start->allow_extras();
  start->fallthrough(false);  // serve flags stay here, in order (remaining())
  start->add_flag("--foreground", f->foreground,
                  "Run in the foreground as this process (for systemd; logs go to stdout)");
  start->add_option("--ready-timeout", f->ready_timeout_s,
                    "Seconds to wait for /ready before giving up (default 60)");
  start->footer(
      "Every other flag goes to `ebb serve` (see `ebb serve --help`); the default port is "
      "11435. State: $EBB_HOME, else $XDG_STATE_HOME/ebb, else ~/.local/state/ebb.");
  start->callback([f, start] {
    CheckSeconds(f->ready_timeout_s, "--ready-timeout");
    const fs::path dir = ServiceStateDir();
    EnsureServiceStateDir(dir);
    ServiceLock lock(dir);
    StartService(dir, start->remaining(), f->foreground, f->ready_timeout_s);
  });

  CLI::App* stop = svc->add_subcommand(
      "stop", "Stop the service: SIGTERM, let running requests finish, SIGKILL if it hangs");
  stop->add_option("--drain-timeout", f->drain_timeout_s,
                   "Seconds running requests get before SIGKILL (plus 5 s to exit; default: the "
                   "service's own --drain-timeout, else 30)");
  stop->callback([f] {
    CheckSeconds(f->drain_timeout_s, "--drain-timeout");
    const fs::path dir = ServiceStateDir();
    EnsureServiceStateDir(dir);
    ServiceLock lock(dir);
    StopService(dir, f->drain_timeout_s);
  });

  CLI::App* restart = svc->add_subcommand(
      "restart",
      "Stop the service (even a hung or crashed one) and start it again with the same serve "
      "flags, or with the serve flags given here");
  restart->allow_extras();
  restart->fallthrough(false);
  restart->add_option("--drain-timeout", f->drain_timeout_s,
                      "Seconds the old service's requests get before SIGKILL (as for stop)");
  restart->add_option("--ready-timeout", f->ready_timeout_s,
                      "Seconds to wait for /ready (default 60)");
  restart->callback([f, restart] {
    CheckSeconds(f->drain_timeout_s, "--drain-timeout");
    CheckSeconds(f->ready_timeout_s, "--ready-timeout");
    const fs::path dir = ServiceStateDir();
    EnsureServiceStateDir(dir);
    ServiceLock lock(dir);
    std::vector<std::string> args = restart->remaining();
    std::string cwd;  // the recorded flags resolve against the recorded working directory
    if (args.empty()) {
      try {
        if (auto old = ReadServiceStateFile(dir)) {
          args = old->args;
          cwd = old->cwd;
        }
      } catch (const Error&) {
        // unreadable: no flags to reuse; StopService removes it
      }
      if (args.empty()) {
        throw Error(ErrorCode::FailedPrecondition,
                    "nothing to restart: " + ServiceStateFile(dir).string() +
                        " has no serve flags to reuse; give them, e.g. `ebb service restart "
                        "--models-dir DIR`, or use `ebb service start`");
      }
    }
    StopService(dir, f->drain_timeout_s);
    StartService(dir, args, false, f->ready_timeout_s, cwd);
  });

  CLI::App* status = svc->add_subcommand(
      "status",
      "Address, pid, uptime, models and memory of the service; exit 3 when it is not running");
  status->add_flag("--json", f->json, "Print JSON for scripts");
  status->callback([f] { Status(ServiceStateDir(), f->json); });
}

}  // namespace ebb::cli
