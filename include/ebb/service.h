// ebb/service.h — finding the running `ebb service` (docs/service.md, "The state directory"):
// what `ebb ps`, `ebb model ...` and the Python SDK's ebb.connect() use, so that every client
// applies the same staleness rule.
//
// The state directory is $EBB_HOME, else $XDG_STATE_HOME/ebb, else ~/.local/state/ebb; the
// service writes service.json there once it listens. A service.json whose pid is gone, or now
// belongs to another process (its start time differs), is stale and describes no service.
// Thread-safety: may be called from any thread; reads files (and /proc) only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "ebb/export.h"

namespace ebb {

struct RunningService {
  int pid = 0;
  std::string url;  // where clients connect, e.g. "http://127.0.0.1:11435"
  std::string log;  // the file its output goes to; "" when not a regular file
  int64_t started_unix_ms = 0;
  // The key a client needs: the service's --api-key or --api-key-file, or the $EBB_API_KEY it
  // inherited; "" when it has none.
  std::string api_key;
  std::filesystem::path state_file;  // the service.json it was read from
};

// The state directory from the environment (see above); not created.
EBB_API std::filesystem::path ServiceStateDirectory();

// The service described by `dir`/service.json (default: ServiceStateDirectory()) when its
// process is alive with the recorded start time; nullopt when there is no such file or it is
// stale. Throws ebb::Error (InvalidArgument) naming the file when it exists but cannot be read or
// is not a service state.
EBB_API std::optional<RunningService> FindRunningService(const std::filesystem::path& dir = {});

}  // namespace ebb
