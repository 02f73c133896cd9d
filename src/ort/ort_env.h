// The process-wide Ort::Env. ONNX Runtime supports one environment per process; every
// session ebb creates is created under this one.
#pragma once

#include <onnxruntime_cxx_api.h>

namespace ebb::internal {

// Created on first use (thread-safe), lives until process exit. ORT's own log messages at
// warning and above are routed to ebb's logger.
Ort::Env& OrtEnvironment();

}  // namespace ebb::internal
