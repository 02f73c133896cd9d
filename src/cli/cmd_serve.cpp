// `ebb serve`: the OpenAI-compatible local service (src/server, docs/http_api.md).
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/options_flags.h"
#include "cli/service_names.h"
#include "core/files.h"
#include "core/log.h"
#include "core/strings.h"
#include "ebb/model_manager.h"
#include "platform/process.h"
#include "server/models_file.h"
#include "server/server.h"

namespace ebb::cli {
namespace {

std::atomic<int> g_stop{0};  // set by a stop signal (lock-free: safe in its handler)

// A port is a plain decimal number 0 to 65535: no sign, no "0x", no trailing text, no leading
// zero ("080" is not 80 to everyone).
int ParsePort(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 5 &&
                      text.find_first_not_of("0123456789") == std::string::npos &&
                      (text.size() == 1 || text[0] != '0');
  if (!digits || std::stoi(text) > 65535) {
    throw Error(ErrorCode::InvalidArgument, "--port '" + text +
                                                "' is not a port: give a decimal number 1 to "
                                                "65535 (0: any free port)");
  }
  return std::stoi(text);
}

// This machine only: 127.0.0.0/8, ::1, localhost.
bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}
void OnSignal(platform::ProcessSignal) { g_stop = 1; }

struct ServeFlags {
  server::ServeOptions opts;
  std::string port_text = "11435";
  std::string memory_limit;
  std::string keep_alive = "5m";
  std::string evict_wait = "30s";
  std::string max_body = "8MiB";
  std::string api_key_file;
  std::string admin_key_file;
  std::string models_dir;
  std::string models_file;
  std::vector<std::string> models;
  int drain_timeout_s = 30;
  int ready_stall_timeout_s = 60;
  int request_timeout_s = 30;
  bool insecure_no_key = false;
  std::string state_dir;  // --state-dir: where service.json goes (docs/service.md)
  OptionFlags options;
};

// service.json for the lifetime of the listening server: written (atomically) once it listens,
// removed when it stops cleanly, unless a newer service has replaced it meanwhile.
class StateFileGuard {
 public:
  StateFileGuard(std::filesystem::path dir, const server::ServeOptions& o, int port)
      : dir_(std::move(dir)) {
    ServiceState s;
    s.pid = static_cast<int>(platform::CurrentPid());
    s.start_time = ProcessStartTime(s.pid).value_or(0);
    s.host = o.host;
    s.port = port;
    s.url = ServiceUrl(o.host, port);
    // The log is where stdout goes when that is a regular file (ebb service start points it at
    // service.log); under --foreground it is a terminal or the journal: "".
    std::error_code ec;
    if (const auto out = platform::StdoutRegularFile()) s.log = *out;
    s.args = ServeArgsOfThisProcess();
    s.cwd = std::filesystem::current_path(ec).string();
    s.started_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    WriteServiceState(dir_, s);
    pid_ = s.pid;
  }
  ~StateFileGuard() { RemoveServiceStateOf(dir_, pid_); }
  StateFileGuard(const StateFileGuard&) = delete;
  StateFileGuard& operator=(const StateFileGuard&) = delete;

 private:
  std::filesystem::path dir_;
  int pid_ = 0;
};

void Run(ServeFlags& f) {
  server::ServeOptions& o = f.opts;
  o.port = ParsePort(f.port_text);
  if (f.request_timeout_s < 1 || f.request_timeout_s > 3600) {
    throw Error(ErrorCode::InvalidArgument, "--request-timeout " +
                                                std::to_string(f.request_timeout_s) +
                                                " is out of range: 1 to 3600 seconds");
  }
  o.request_timeout = std::chrono::seconds(f.request_timeout_s);
  if (!f.memory_limit.empty()) o.runtime.Set("memory.limit", f.memory_limit);
  o.models.keep_alive = ParseKeepAlive(f.keep_alive, "--keep-alive");
  {
    const KeepAlive w = ParseKeepAlive(f.evict_wait, "--evict-wait");
    if (w.count() < 0) {
      throw Error(
          ErrorCode::InvalidArgument,
          "--evict-wait must be a duration such as 30s or 0 (fail at once), not " + f.evict_wait);
    }
    o.models.evict_wait = w;
  }
  o.max_body_bytes = ParseByteSize(f.max_body, "--max-body");
  if (f.drain_timeout_s < 0 || f.drain_timeout_s > 3600) {
    throw Error(ErrorCode::InvalidArgument, "--drain-timeout " + std::to_string(f.drain_timeout_s) +
                                                " is out of range: 0 to 3600 seconds");
  }
  o.drain_timeout = std::chrono::seconds(f.drain_timeout_s);
  o.ready_stall_timeout = std::chrono::seconds(f.ready_stall_timeout_s);
  // The API key: the flag, else a file, else $EBB_API_KEY.
  if (o.api_key.empty() && !f.api_key_file.empty()) {
    o.api_key = internal::Trim(internal::ReadRegularFile(f.api_key_file, 4096, "--api-key-file"));
    if (o.api_key.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--api-key-file " + f.api_key_file + " is empty");
    }
  }
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("EBB_API_KEY"); k != nullptr) o.api_key = k;
  }
  if (o.admin_key.empty() && !f.admin_key_file.empty()) {
    o.admin_key =
        internal::Trim(internal::ReadRegularFile(f.admin_key_file, 4096, "--admin-key-file"));
    if (o.admin_key.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--admin-key-file " + f.admin_key_file + " is empty");
    }
  }
  // As for the API key: $EBB_ADMIN_KEY last, so that a unit's EnvironmentFile (deploy/) can
  // carry both keys without putting either on the command line.
  if (o.admin_key.empty()) {
    if (const char* k = std::getenv("EBB_ADMIN_KEY"); k != nullptr) o.admin_key = k;
  }
  if (!o.admin_key.empty() && o.admin_key == o.api_key) {
    throw Error(ErrorCode::InvalidArgument,
                "--admin-key must differ from --api-key: every client holds the API key");
  }
  if (o.api_key.empty() && !IsLoopbackHost(o.host) && !f.insecure_no_key) {
    throw Error(ErrorCode::InvalidArgument,
                "--host " + o.host +
                    " would let other machines reach the service, and it has no API key: "
                    "anyone who can reach the port could load and unload models, read what "
                    "they answer and fill the memory budget. Give --api-key (or "
                    "--api-key-file, $EBB_API_KEY), or --insecure-no-key if the network is "
                    "trusted");
  }
  o.models.models_dir = f.models_dir;
  if (!f.models_file.empty()) o.models.models = server::ReadModelsFile(f.models_file);
  for (const auto& m : f.models) {
    auto [id, path] = SplitKeyValue(m, "--model");
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      throw Error(ErrorCode::NotFound, "--model " + m + ": " + path + " is not a model folder");
    }
    o.models.models[id].path = std::filesystem::absolute(path);
  }
  o.models.defaults = f.options.ToOptionList();
  ModelOptions probe;  // a typo in a default option fails now, naming the key
  for (const auto& [k, v] : o.models.defaults) probe.Set(k, v);
  if (o.models.models_dir.empty() && o.models.models.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "ebb serve has no models: give --models-dir DIR (one folder per model), "
                "--model ID=PATH, or --models-file FILE");
  }

  platform::IgnoreBrokenPipe();  // a client that went away is a failed write, not a signal
  std::filesystem::path state_dir;
  if (!f.state_dir.empty()) {
    state_dir = std::filesystem::absolute(f.state_dir);
    EnsureServiceStateDir(state_dir);
    if (auto other = ReadRunningService(state_dir); other && other->pid != platform::CurrentPid()) {
      throw Error(ErrorCode::FailedPrecondition,
                  "another ebb service (pid " + std::to_string(other->pid) + ", " + other->url +
                      ") owns the state directory " + state_dir.string() +
                      "; stop it (ebb service stop) or give another --state-dir");
    }
  }
  server::Server srv(o);
  // A model that can never load (a provider this ONNX Runtime build lacks, a chat template that
  // does not parse) refuses the start: every request to it would fail, and the log of a
  // service that started says nothing until then.
  srv.manager().CheckModels();
  srv.Bind();
  std::optional<StateFileGuard> state;
  if (!state_dir.empty()) state.emplace(state_dir, o, srv.port());
  platform::HandleStopSignals(OnSignal);  // SIGTERM, SIGINT
  // The first line says where it listens (scripts and tests read it).
  std::cout << "ebb serve: listening on http://" << o.host << ":" << srv.port() << std::endl;
  std::thread watcher([&srv] {
    while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Through the logger (warn: shown by default), so that --log-format json keeps every
    // stderr line JSON.
    EBB_LOG_WARN("ebb serve: stopping (draining running requests)");
    srv.Shutdown();
  });
  srv.Run();
  if (g_stop == 0) {
    g_stop = 1;  // Run returned on its own (listen failed): release the watcher
  }
  watcher.join();
  std::cout << "ebb serve: stopped" << std::endl;
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve models over an OpenAI-compatible HTTP API with memory endpoints and "
      "/metrics (docs/http_api.md)");
  cmd->add_option("--host", f->opts.host,
                  "Address to bind (default 127.0.0.1: this machine only; another address needs "
                  "--api-key or --insecure-no-key)");
  cmd->add_option("--port", f->port_text, "Port (default 11435; 0: any free port)");
  cmd->add_option("--models-dir", f->models_dir,
                  "Folder whose sub-folders are models; the folder name is the model id");
  cmd->add_option("--model", f->models, "A model as ID=PATH (repeatable)");
  cmd->add_option("--models-file", f->models_file,
                  "JSON file of models with their own options, keep-alive and pin "
                  "(docs/http_api.md)");
  cmd->add_option("--memory-limit", f->memory_limit,
                  "memory.limit: budget for all models' weights and KV, e.g. 8GiB (idle models "
                  "are evicted to fit; default: none)");
  cmd->add_option("--keep-alive", f->keep_alive,
                  "How long a model stays loaded after its last request (default 5m; -1: "
                  "forever; 0: unload at once)");
  cmd->add_option("--evict-wait", f->evict_wait,
                  "How long a request for a model that does not fit under --memory-limit waits "
                  "for requests on other models to end so one can be evicted (default 30s; 0: "
                  "507 at once)");
  cmd->add_flag("--allow-client-keep-alive", f->opts.models.allow_client_keep_alive,
                "Let requests ask for a keep-alive longer than --keep-alive");
  cmd->add_option(
      "--parallel", f->opts.parallel,
      "Requests that run at once (default 2; 1 to " + std::to_string(server::kMaxParallel) +
          "); also each model's default decode_batch.max_rows (concurrent requests on one model "
          "decode in one Run() per step; --option decode_batch.max_rows=1: off)");
  cmd->add_option("--max-queue", f->opts.max_queue,
                  "Requests that may wait for a slot; more get 429 (default 16; 0 to " +
                      std::to_string(server::kMaxQueue) + ")");
  cmd->add_option("--api-key", f->opts.api_key,
                  "Require 'Authorization: Bearer KEY' (also --api-key-file, $EBB_API_KEY)");
  cmd->add_option("--api-key-file", f->api_key_file, "Read the API key from this file");
  cmd->add_option("--admin-key", f->opts.admin_key,
                  "A second key that also lets a request set the admin-only options (also "
                  "--admin-key-file, $EBB_ADMIN_KEY; default: none, only the command line sets "
                  "them)");
  cmd->add_option("--admin-key-file", f->admin_key_file, "Read the admin key from this file");
  cmd->add_option("--max-body", f->max_body, "Largest request body (default 8MiB); more: 413");
  cmd->add_option("--allowed-host", f->opts.allowed_hosts,
                  "Also accept requests whose Host header is this name (repeatable; '*': any). "
                  "Default: the bound address and localhost only (DNS-rebinding defence)");
  cmd->add_option("--allowed-origin", f->opts.allowed_origins,
                  "Let web pages from this origin (e.g. http://localhost:3000) call the API, "
                  "with CORS headers (repeatable; '*': any). Default: none");
  cmd->add_flag("--insecure-no-key", f->insecure_no_key,
                "Allow a --host other than loopback without an API key");
  cmd->add_option("--request-timeout", f->request_timeout_s,
                  "Seconds a request's head and body may take to arrive (default 30); "
                  "then 408");
  cmd->add_option("--drain-timeout", f->drain_timeout_s,
                  "Seconds running and queued requests get to finish on SIGTERM (default 30; "
                  "0 to 3600); meanwhile /ready and new requests get 503");
  cmd->add_option("--ready-stall-timeout", f->ready_stall_timeout_s,
                  "Seconds without progress (no token, no request admitted or finished) while "
                  "requests run or wait after which /ready answers 503 'stalled' (default 60; "
                  "0: off)");
  cmd->add_option("--state-dir", f->state_dir,
                  "Write service.json (pid, address, log, flags) to this folder while listening, "
                  "as `ebb service` does (docs/service.md)");
  AddOptionFlags(*cmd, f->options);
  cmd->add_option("--ep", f->options.ep,
                  "Execution provider of every model: cpu, cuda, ... (the option "
                  "execution_provider; default: each genai_config.json's list). One this ONNX "
                  "Runtime lacks refuses the start");
  cmd->callback([f] { Run(*f); });
}

}  // namespace ebb::cli
