// Builds Ort::SessionOptions from defaults, genai_config.json and the user's options (in that
// order of precedence). Typed keys use ORT's setters; any other key is passed to ORT as a session
// config entry and logged at info level with where it went.
#pragma once

#include <onnxruntime_cxx_api.h>

#include "ebb/options.h"
#include "model/genai_config.h"

namespace ebb::internal {

// Throws ebb::Error(InvalidArgument) naming the key for a value ebb or ORT refuses, and
// Unavailable for an execution provider this ORT build lacks.
Ort::SessionOptions BuildSessionOptions(const GenaiConfig& config, const ModelOptions& options);

}  // namespace ebb::internal
