// The two forms of ebb's log lines (ebb/log.h SetLogFormat):
//  - text: "[time] [ebb] [level] message"; the lines an operator reads per event (a request, a
//    model load) are in logfmt, "event key=value key=value ...", built with LogLine;
//  - json: one JSON object per line, {"time", "level", "logger", "msg"}, where a logfmt message
//    becomes {"event": ..., key: value, ...} (numbers as numbers), for log collectors.
// Thread-safety: LogLine is a value; the formatter is used under spdlog's sink lock.
#pragma once

#include <spdlog/formatter.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ebb::internal {

// Builds "event key=value ...". A value with a space, '"', '=' or nothing in it is quoted, with
// '"' and '\' escaped.
class LogLine {
 public:
  explicit LogLine(std::string_view event) : text_(event) {}
  LogLine& Add(std::string_view key, std::string_view value);
  LogLine& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value));
  }
  LogLine& Add(std::string_view key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
  LogLine& Add(std::string_view key, uint64_t value);
  LogLine& Add(std::string_view key, int64_t value);
  LogLine& Add(std::string_view key, int value) { return Add(key, static_cast<int64_t>(value)); }
  // Milliseconds and other rates, with one decimal.
  LogLine& Add(std::string_view key, double value);
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// Parses a logfmt message ("event key=value ...", the event a lower-case word) into
// {"event": ..., key: value}; a value that is a plain number becomes a JSON number. False (and
// `out` untouched) for any other message.
bool LogfmtToJson(std::string_view message, nlohmann::json& out);

// spdlog formatter of the json form.
std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter();

}  // namespace ebb::internal
