#include "ebb/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/log.h"
#include "ebb/error.h"

namespace ebb {
namespace {

TEST(Log, CallbackReceivesRecordsAtOrAboveLevel) {
  std::vector<std::string> seen;
  SetLogCallback([&](LogLevel, std::string_view msg) { seen.emplace_back(msg); });
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::Info);
  EBB_LOG_DEBUG("hidden {}", 1);
  EBB_LOG_INFO("shown {}", 2);
  SetLogLevel(before);
  SetLogCallback(nullptr);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "shown 2");
}

TEST(Log, ParseLogLevelRejectsUnknownNames) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::Debug);
  try {
    ParseLogLevel("loud");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("trace, debug"), std::string::npos);
  }
}

}  // namespace
}  // namespace ebb
