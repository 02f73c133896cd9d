#include "runtime/service_state.h"

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/files.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/service.h"
#include "platform/file.h"
#include "platform/process.h"

namespace ebb::internal {
namespace fs = std::filesystem;
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

fs::path ServiceStateDir() {
  if (const std::string home = Env("EBB_HOME"); !home.empty()) return fs::absolute(home);
  // The XDG base-directory spec: a relative $XDG_STATE_HOME is invalid and ignored.
  if (const std::string xdg = Env("XDG_STATE_HOME"); !xdg.empty() && xdg[0] == '/') {
    return fs::path(xdg) / "ebb";
  }
  std::string home = Env("HOME");
  if (home.empty()) {
    home = platform::HomeDirectory();
  }
  if (home.empty()) {
    throw Error(ErrorCode::FailedPrecondition,
                "cannot find the ebb state directory: $HOME is not set; set $EBB_HOME to a folder");
  }
  return fs::path(home) / ".local" / "state" / "ebb";
}

void EnsureServiceStateDir(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw Error(ErrorCode::FailedPrecondition,
                "cannot create the ebb state directory " + dir.string() + ": " +
                    (ec ? ec.message() : "not a folder") +
                    "; fix its permissions or set $EBB_HOME to another folder");
  }
  // pid, log and options of one user's service: keep them private (mode 0700)
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
}

fs::path ServiceStateFile(const fs::path& dir) { return dir / "service.json"; }
fs::path ServiceLogFile(const fs::path& dir) { return dir / "service.log"; }
fs::path ServiceLockFile(const fs::path& dir) { return dir / "service.lock"; }

std::optional<uint64_t> ProcessStartTime(int pid) { return platform::ProcessStartTime(pid); }

std::string ProcessName(int pid) { return platform::ProcessName(pid); }

std::string ServiceStateJson(const ServiceState& s) {
  nlohmann::ordered_json j;
  j["pid"] = s.pid;
  j["start_time"] = s.start_time;
  j["url"] = s.url;
  j["host"] = s.host;
  j["port"] = s.port;
  j["log"] = s.log;
  j["args"] = s.args;
  j["started_unix_ms"] = s.started_unix_ms;
  j["cwd"] = s.cwd;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ServiceState ParseServiceState(const std::string& text, const std::string& source) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorCode::InvalidArgument,
                 source + " is not a valid ebb service state (" + what +
                     "); `ebb service stop` removes it, or delete it by hand");
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    throw bad("not JSON");
  }
  if (!j.is_object()) throw bad("not a JSON object");
  ServiceState s;
  try {
    s.pid = j.at("pid").get<int>();
    s.start_time = j.at("start_time").get<uint64_t>();
    s.url = j.at("url").get<std::string>();
    s.host = j.at("host").get<std::string>();
    s.port = j.at("port").get<int>();
    s.log = j.at("log").get<std::string>();
    s.args = j.at("args").get<std::vector<std::string>>();
    s.started_unix_ms = j.at("started_unix_ms").get<int64_t>();
    s.cwd = j.value("cwd", std::string());
  } catch (const std::exception& e) {
    throw bad(std::string("a field is missing or of the wrong type: ") + e.what());
  }
  if (s.pid <= 0) throw bad("pid must be positive");
  return s;
}

Liveness CheckLiveness(const ServiceState& s) {
  const auto start = ProcessStartTime(s.pid);
  if (!start) return Liveness::kGone;
  return *start == s.start_time ? Liveness::kRunning : Liveness::kPidReused;
}

std::optional<ServiceState> ReadServiceStateFile(const fs::path& dir) {
  const fs::path file = ServiceStateFile(dir);
  if (!internal::FileExists(file, "service.json")) return std::nullopt;
  const std::string text = internal::ReadRegularFile(file, 1 << 20, "service.json");
  return ParseServiceState(text, file.string());
}

std::optional<ServiceState> ReadRunningService(const fs::path& dir) {
  try {
    auto s = ReadServiceStateFile(dir);
    if (s && CheckLiveness(*s) == Liveness::kRunning) return s;
  } catch (const std::exception&) {
    // Unreadable or malformed: no running service can be found through it.
  }
  return std::nullopt;
}

std::optional<ServiceState> ReadRunningService() {
  try {
    return ReadRunningService(ServiceStateDir());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void WriteServiceState(const fs::path& dir, const ServiceState& s) {
  const fs::path file = ServiceStateFile(dir);
  const fs::path tmp = dir / (".service.json." + std::to_string(platform::CurrentPid()) + ".tmp");
  // A reader sees the old file or the new one, never a partial one.
  const platform::FileStepResult r = platform::WriteFileAtomically(file, tmp, ServiceStateJson(s));
  if (!r.ok()) {
    throw Error(ErrorCode::FailedPrecondition,
                "cannot write " + file.string() + " (" + r.step + ": " +
                    internal::DescribeErrno(r.error) +
                    "); check the state directory's permissions or set --state-dir/$EBB_HOME "
                    "elsewhere");
  }
}

bool RemoveServiceStateOf(const fs::path& dir, int pid) {
  try {
    const auto s = ReadServiceStateFile(dir);
    if (!s || s->pid != pid) return false;
  } catch (const std::exception&) {
    return false;
  }
  std::error_code ec;
  return fs::remove(ServiceStateFile(dir), ec);
}

void RemoveServiceState(const fs::path& dir) {
  std::error_code ec;
  fs::remove(ServiceStateFile(dir), ec);
}

std::vector<std::string> ServeArgsOfThisProcess() {
  const std::vector<std::string> argv = platform::SelfCommandLine();
  std::vector<std::string> out;
  bool after_serve = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (!after_serve) {
      after_serve = argv[i] == "serve";
      continue;
    }
    if (argv[i] == "--state-dir") {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind("--state-dir=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

std::string ServiceUrl(const std::string& host, int port) {
  std::string h = host;
  if (h.empty() || h == "0.0.0.0") h = "127.0.0.1";
  if (h == "::" || h == "[::]") h = "::1";
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  return "http://" + h + ":" + std::to_string(port);
}

ServiceLock::ServiceLock(const fs::path& dir)
    : lock_(ServiceLockFile(dir), platform::FileLock::Wait::kYes, /*owner_only=*/true) {
  if (lock_.held()) return;
  const fs::path file = ServiceLockFile(dir);
  if (lock_.open_failed()) {
    throw Error(ErrorCode::FailedPrecondition,
                "cannot open " + file.string() + ": " + internal::DescribeErrno(lock_.err()) +
                    "; check the state directory's permissions or set $EBB_HOME elsewhere");
  }
  throw Error(ErrorCode::FailedPrecondition,
              "cannot lock " + file.string() + ": " + internal::DescribeErrno(lock_.err()));
}

ServiceLock::~ServiceLock() = default;  // releasing the lock file's lock

std::optional<std::string> ServeFlagValue(const std::vector<std::string>& args,
                                          const std::string& name) {
  std::optional<std::string> v;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size()) {
      v = args[++i];
    } else if (args[i].rfind(name + "=", 0) == 0) {
      v = args[i].substr(name.size() + 1);
    }
  }
  return v;
}

// The API key a client of the service needs: its --api-key, its --api-key-file, or
// $EBB_API_KEY (which the service inherited when this user started it).
std::string ServiceApiKey(const ServiceState& s) {
  if (auto k = ServeFlagValue(s.args, "--api-key")) return *k;
  if (auto f = ServeFlagValue(s.args, "--api-key-file")) {
    try {
      return internal::Trim(
          internal::ReadRegularFile(std::filesystem::path(s.cwd) / *f, 4096, "--api-key-file"));
    } catch (const std::exception&) {
      return "";
    }
  }
  const char* k = std::getenv("EBB_API_KEY");
  return k == nullptr ? "" : k;
}

}  // namespace ebb::internal

namespace ebb {

std::filesystem::path ServiceStateDirectory() { return internal::ServiceStateDir(); }

std::optional<RunningService> FindRunningService(const std::filesystem::path& dir) {
  const std::filesystem::path d = dir.empty() ? internal::ServiceStateDir() : dir;
  const std::optional<internal::ServiceState> s = internal::ReadServiceStateFile(d);
  if (!s || internal::CheckLiveness(*s) != internal::Liveness::kRunning) return std::nullopt;
  RunningService r;
  r.pid = s->pid;
  r.url = s->url;
  r.log = s->log;
  r.started_unix_ms = s->started_unix_ms;
  r.api_key = internal::ServiceApiKey(*s);
  r.state_file = internal::ServiceStateFile(d);
  return r;
}

}  // namespace ebb
