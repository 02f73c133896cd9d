#include "core/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>

#include "core/log_format.h"
#include "ebb/error.h"
#include "ebb/log.h"

namespace ebb {
namespace {

constexpr const char* kTextPattern = "[%Y-%m-%d %H:%M:%S.%e] [ebb] [%l] %v";

spdlog::level::level_enum ToSpd(LogLevel level) {
  switch (level) {
    case LogLevel::Trace:
      return spdlog::level::trace;
    case LogLevel::Debug:
      return spdlog::level::debug;
    case LogLevel::Info:
      return spdlog::level::info;
    case LogLevel::Warn:
      return spdlog::level::warn;
    case LogLevel::Error:
      return spdlog::level::err;
    case LogLevel::Off:
      return spdlog::level::off;
  }
  return spdlog::level::warn;
}

LogLevel FromSpd(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return LogLevel::Trace;
    case spdlog::level::debug:
      return LogLevel::Debug;
    case spdlog::level::info:
      return LogLevel::Info;
    case spdlog::level::warn:
      return LogLevel::Warn;
    case spdlog::level::err:
    case spdlog::level::critical:
      return LogLevel::Error;
    default:
      return LogLevel::Off;
  }
}

// Forwards records to the user's callback. The callback is swapped under the sink's mutex.
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void Set(LogCallback cb) {
    std::lock_guard<std::mutex> lock(mutex_);
    callback_ = std::move(cb);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (callback_) {
      callback_(FromSpd(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
    }
  }
  void flush_() override {}

 private:
  LogCallback callback_;
};

struct LoggerState {
  std::shared_ptr<CallbackSink> callback_sink = std::make_shared<CallbackSink>();
  std::shared_ptr<spdlog::logger> logger;

  LoggerState() {
    auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    logger = std::make_shared<spdlog::logger>("ebb", spdlog::sinks_init_list{err, callback_sink});
    logger->set_pattern(kTextPattern);
    LogLevel level = LogLevel::Warn;
    if (const char* env = std::getenv("EBB_LOG_LEVEL"); env != nullptr && *env != '\0') {
      try {
        level = ParseLogLevel(env);
      } catch (const Error&) {
        // An unparsable value falls back to the default; say so once.
        logger->warn("EBB_LOG_LEVEL='{}' is not a level (trace|debug|info|warn|error|off)", env);
      }
    }
    logger->set_level(ToSpd(level));
    if (const char* env = std::getenv("EBB_LOG_FORMAT");
        env != nullptr && std::string_view(env) == "json") {
      logger->set_formatter(internal::MakeJsonLogFormatter());
    }
    logger->flush_on(spdlog::level::warn);
  }
};

LoggerState& State() {
  static LoggerState state;  // Leaked-on-exit semantics are not needed: spdlog is header-based.
  return state;
}

}  // namespace

namespace internal {
spdlog::logger& Logger() { return *State().logger; }
}  // namespace internal

void SetLogLevel(LogLevel level) { State().logger->set_level(ToSpd(level)); }
LogLevel GetLogLevel() { return FromSpd(State().logger->level()); }

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "trace") return LogLevel::Trace;
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warn" || name == "warning") return LogLevel::Warn;
  if (name == "error") return LogLevel::Error;
  if (name == "off") return LogLevel::Off;
  throw Error(ErrorCode::InvalidArgument, "unknown log level '" + std::string(name) +
                                              "'; use one of trace, debug, info, warn, error, off");
}

void SetLogCallback(LogCallback callback) { State().callback_sink->Set(std::move(callback)); }

void SetLogFormat(LogFormat format) {
  if (format == LogFormat::Json) {
    State().logger->set_formatter(internal::MakeJsonLogFormatter());
  } else {
    State().logger->set_pattern(kTextPattern);
  }
}

LogFormat ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::Text;
  if (name == "json") return LogFormat::Json;
  throw Error(ErrorCode::InvalidArgument,
              "unknown log format '" + std::string(name) + "'; use text or json");
}

}  // namespace ebb
