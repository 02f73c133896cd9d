// tests/log_capture.h — capturing ebb's log in a test: every line at a level and above while
// the capture lives, so a test can assert what a load said (and why it did something).
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "ebb/log.h"

namespace ebb::testing {

// Sets the log level (info unless told: what a load decided; warn: only what a user is warned
// of) and takes the log callback for its life; restores the level and removes the callback when
// it goes (also on an early ASSERT return). One at a time per process.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level = LogLevel::Info) : level_(GetLogLevel()) {
    SetLogLevel(level);
    SetLogCallback([this](LogLevel, std::string_view msg) {
      std::lock_guard<std::mutex> lock(mu_);
      text_ += std::string(msg) + "\n";
    });
  }
  ~LogCapture() {
    SetLogCallback(nullptr);
    SetLogLevel(level_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The lines captured since the last Take, one per line, left in place.
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

  // The lines captured since the last Take, one per line; the capture starts over.
  std::string Take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string t;
    t.swap(text_);
    return t;
  }

 private:
  LogLevel level_;
  std::mutex mu_;
  std::string text_;
};

}  // namespace ebb::testing
