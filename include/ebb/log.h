// ebb/log.h — ebb's logging switches. ebb logs through one process-wide logger named "ebb".
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ebb/export.h"

namespace ebb {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Off };

// Sets the minimum level that is emitted. Default: Warn, or $EBB_LOG_LEVEL
// (trace|debug|info|warn|error|off) when set.
EBB_API void SetLogLevel(LogLevel level);
EBB_API LogLevel GetLogLevel();

// Parses "trace".."off"; throws ebb::Error(InvalidArgument) naming the accepted values.
EBB_API LogLevel ParseLogLevel(std::string_view name);

// Receives every emitted record (level, message) in addition to stderr. Pass an empty
// function to remove it. Used by tests and by embedders that route logs elsewhere.
using LogCallback = std::function<void(LogLevel, std::string_view)>;
EBB_API void SetLogCallback(LogCallback callback);

}  // namespace ebb
