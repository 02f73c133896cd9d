// tests/template/template_test_util.h — shared helpers of the chat template tests.
#pragma once

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef EBB_SOURCE_DIR
#define EBB_SOURCE_DIR "."
#endif

namespace ebb::testing {

inline std::filesystem::path TemplateDataDir() {
  return std::filesystem::path(EBB_SOURCE_DIR) / "tests" / "template" / "data";
}

inline std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fixed clock tools/render_chat_template.py uses: 2024-07-26 12:00:00 local time.
inline std::chrono::system_clock::time_point FixedNow() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&tm));
}

}  // namespace ebb::testing
