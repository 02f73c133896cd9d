// ParseKeepAlive / FormatKeepAlive (include/ebb/model_manager.h): Ollama-style durations. A file
// of its own so that the request parser's fuzzer compiles it without the runtime.
#include <algorithm>
#include <cctype>
#include <string>

#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/model_manager.h"

namespace ebb {

KeepAlive ParseKeepAlive(std::string_view text, std::string_view what) {
  const std::string t = internal::Trim(text);
  auto bad = [&]() -> Error {
    return Error(ErrorCode::InvalidArgument,
                 std::string(what) + " '" + internal::EscapeForMessage(t, 40) +
                     "' is not a duration: use e.g. 5m, 30s, 1h30m, 250ms, a number of seconds, "
                     "or a negative number to keep the model loaded forever");
  };
  if (t.empty()) throw bad();
  if (t[0] == '-') {
    // Any negative number (Ollama's "-1", "-1s") means forever.
    if (t.size() < 2 || !std::isdigit(static_cast<unsigned char>(t[1]))) throw bad();
    return kKeepAliveForever;
  }
  // A plain number: seconds.
  if (std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    if (t.size() > 9) throw bad();
    return std::chrono::seconds(std::stoll(t));
  }
  double total_ms = 0;
  size_t i = 0;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '.')) ++j;
    if (j == i || j - i > 12) throw bad();
    double value = 0;
    try {
      value = std::stod(t.substr(i, j - i));
    } catch (...) {
      throw bad();
    }
    size_t k = j;
    while (k < t.size() && std::isalpha(static_cast<unsigned char>(t[k]))) ++k;
    const std::string unit = t.substr(j, k - j);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1e3;
    } else if (unit == "m") {
      scale = 60e3;
    } else if (unit == "h") {
      scale = 3600e3;
    } else {
      throw bad();
    }
    total_ms += value * scale;
    i = k;
  }
  if (total_ms > 365.0 * 24 * 3600e3) throw bad();
  return KeepAlive(static_cast<int64_t>(total_ms));
}

std::string FormatKeepAlive(KeepAlive keep_alive) {
  if (keep_alive.count() < 0) return "forever";
  const int64_t ms = keep_alive.count();
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  const int64_t s = ms / 1000;
  std::string out;
  if (s >= 3600) out += std::to_string(s / 3600) + "h";
  if (s % 3600 >= 60) out += std::to_string(s % 3600 / 60) + "m";
  if (s % 60 != 0 || out.empty()) out += std::to_string(s % 60) + "s";
  return out;
}

}  // namespace ebb
