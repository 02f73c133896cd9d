// ebb/version.h — build and runtime identification.
#pragma once

#include <string>
#include <vector>

#include "ebb/export.h"

namespace ebb {

// ebb's own version, e.g. "0.1.0".
EBB_API std::string Version();

// The ONNX Runtime version actually loaded at run time (not the headers' version).
EBB_API std::string OrtVersion();

// Execution providers compiled into the loaded ONNX Runtime, e.g. {"CPUExecutionProvider"}.
EBB_API std::vector<std::string> AvailableProviders();

}  // namespace ebb
