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

// How records are written to stderr (the callback always gets the plain message):
//   Text  "[2026-12-01 14:00:00.123] [ebb] [info] message" (the default). The lines for
//         operators (one per HTTP request, one per model load) are logfmt after the level:
//         "request id=req-1 model=demo route=/v1/chat/completions status=200 ...".
//   Json  one JSON object per line: {"time": "2026-12-01T14:00:00.123Z" (UTC), "level",
//         "logger": "ebb", "msg"}; a logfmt line becomes {"event": "request", "id": ..., ...},
//         numbers as numbers (docs/http_api.md#requests-and-logs).
enum class LogFormat { Text, Json };
EBB_API void SetLogFormat(LogFormat format);
// Parses "text" | "json"; throws ebb::Error(InvalidArgument) naming the accepted values.
EBB_API LogFormat ParseLogFormat(std::string_view name);

}  // namespace ebb
