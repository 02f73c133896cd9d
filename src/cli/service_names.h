// The service state directory's contract (runtime/service_state.h, in the library so that the
// Python SDK finds the service through the public API, ebb/service.h) under the CLI's namespace,
// where the `ebb service` commands, `ebb serve --state-dir` and the service client use it.
#pragma once

#include "runtime/service_state.h"

namespace ebb::cli {

using internal::CheckLiveness;
using internal::EnsureServiceStateDir;
using internal::Liveness;
using internal::ParseServiceState;
using internal::ProcessName;
using internal::ProcessStartTime;
using internal::ReadRunningService;
using internal::ReadServiceStateFile;
using internal::RemoveServiceState;
using internal::RemoveServiceStateOf;
using internal::ServeArgsOfThisProcess;
using internal::ServeFlagValue;
using internal::ServiceApiKey;
using internal::ServiceLock;
using internal::ServiceLockFile;
using internal::ServiceLogFile;
using internal::ServiceState;
using internal::ServiceStateDir;
using internal::ServiceStateFile;
using internal::ServiceStateJson;
using internal::ServiceUrl;
using internal::WriteServiceState;

}  // namespace ebb::cli
