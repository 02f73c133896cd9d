#include "core/log_format.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

namespace ebb::internal {
namespace {

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

bool IsEventWord(std::string_view w) {
  if (w.empty()) return false;
  for (char c : w) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

// A JSON number for a plain decimal ("12", "-3", "4.5"), else the string.
nlohmann::json ValueJson(const std::string& v) {
  if (v.empty() || v.size() > 24) return v;
  size_t i = v[0] == '-' ? 1 : 0;
  bool digits = false;
  bool dot = false;
  for (; i < v.size(); ++i) {
    if (v[i] >= '0' && v[i] <= '9') {
      digits = true;
    } else if (v[i] == '.' && !dot) {
      dot = true;
    } else {
      return v;
    }
  }
  if (!digits || v.back() == '.') return v;
  if (dot) return std::stod(v);
  try {
    return v[0] == '-' ? nlohmann::json(std::stoll(v)) : nlohmann::json(std::stoull(v));
  } catch (const std::exception&) {
    return v;
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::json j;
    const auto t = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[96];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms));
    j["time"] = stamp;
    const auto level = spdlog::level::to_string_view(msg.level);
    j["level"] = std::string(level.data(), level.size());
    j["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    nlohmann::json fields;
    if (LogfmtToJson(payload, fields)) {
      for (auto& [k, v] : fields.items()) j[k] = v;
    } else {
      j["msg"] = std::string(payload);
    }
    // Invalid UTF-8 in a message (a path, a model's text) is replaced, never an exception.
    const std::string line =
        j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

LogLine& LogLine::Add(std::string_view key, std::string_view value) {
  text_ += ' ';
  text_.append(key);
  text_ += '=';
  if (!NeedsQuotes(value)) {
    text_.append(value);
    return *this;
  }
  text_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') text_ += '\\';
    text_ += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  text_ += '"';
  return *this;
}

LogLine& LogLine::Add(std::string_view key, uint64_t value) {
  return Add(key, std::string_view(std::to_string(value)));
}

LogLine& LogLine::Add(std::string_view key, int64_t value) {
  return Add(key, std::string_view(std::to_string(value)));
}

LogLine& LogLine::Add(std::string_view key, double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", value);
  return Add(key, std::string_view(buf));
}

bool LogfmtToJson(std::string_view message, nlohmann::json& out) {
  const size_t sp = message.find(' ');
  if (sp == std::string_view::npos || !IsEventWord(message.substr(0, sp))) return false;
  nlohmann::json j;
  j["event"] = std::string(message.substr(0, sp));
  size_t i = sp;
  while (i < message.size()) {
    if (message[i] != ' ') return false;
    ++i;
    const size_t eq = message.find('=', i);
    if (eq == std::string_view::npos || eq == i) return false;
    const std::string key(message.substr(i, eq - i));
    if (key.find(' ') != std::string::npos || key.find('"') != std::string::npos) return false;
    i = eq + 1;
    std::string value;
    if (i < message.size() && message[i] == '"') {
      ++i;
      bool closed = false;
      while (i < message.size()) {
        const char c = message[i++];
        if (c == '\\' && i < message.size()) {
          value += message[i++];
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) return false;
      j[key] = value;
    } else {
      const size_t end = std::min(message.find(' ', i), message.size());
      value = std::string(message.substr(i, end - i));
      i = end;
      j[key] = ValueJson(value);
    }
  }
  out = std::move(j);
  return true;
}

std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter() {
  return std::make_unique<JsonFormatter>();
}

}  // namespace ebb::internal
