// The process-wide Ort::Env. ONNX Runtime supports one environment per process; every
// session ebb creates is created under this one.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace ebb::internal {

// Created on first use (thread-safe), lives until process exit. ORT's own log messages at
// warning and above are routed to ebb's logger. ORT's telemetry is off (DisableOrtTelemetry).
Ort::Env& OrtEnvironment();

// Turns ONNX Runtime's telemetry off for this process; call before the first Ort::Env is created
// (OrtEnvironment does). The pinned Linux build (1.30, as 1.29) ships a telemetry client (1DS)
// that, on the first CreateEnv, reads /etc/machine-id and /proc/self/cmdline, writes a SQLite event
// queue and a device id under $HOME/.cache/Microsoft/DeveloperTools/.onnxruntime/, an empty
// mat-debug-<pid>.log and a .ses file in the temp dir, starts threads that upload to
// mobile.events.data.microsoft.com, and joins them in an exit handler. It crashes on a command
// line over ~32 KiB and hangs at exit when a thread cannot start (ulimit -v). Only the
// environment variable ORT_DISABLE_TELEMETRY=1 (or true), read when the telemetry client
// starts, prevents all of it; OrtApi::DisableTelemetryEvents, callable only on an existing env,
// is too late (it only stops events), so ebb sets the variable (overriding any value) and also
// calls DisableTelemetryEvents. Idempotent.
void DisableOrtTelemetry();

}  // namespace ebb::internal
