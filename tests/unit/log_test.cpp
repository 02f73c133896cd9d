#include "ebb/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/log.h"
#include "core/log_format.h"
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

TEST(LogFormat, LogfmtLinesRoundTripToJsonWithNumbersAsNumbers) {
  // Issue 27: request lines a collector can parse.
  const std::string line = internal::LogLine("request")
                               .Add("id", "req-1")
                               .Add("route", "/v1/chat/completions")
                               .Add("status", 200)
                               .Add("prompt_tokens", uint64_t{12})
                               .Add("ttft_ms", 4.25)
                               .Add("model", "my \"odd\" model")
                               .Add("empty", "")
                               .str();
  EXPECT_EQ(line,
            "request id=req-1 route=/v1/chat/completions status=200 prompt_tokens=12 "
            "ttft_ms=4.2 model=\"my \\\"odd\\\" model\" empty=\"\"");
  nlohmann::json j;
  ASSERT_TRUE(internal::LogfmtToJson(line, j)) << line;
  EXPECT_EQ(j["event"], "request");
  EXPECT_EQ(j["id"], "req-1");
  EXPECT_EQ(j["status"], 200);
  EXPECT_TRUE(j["status"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 4.2);
  EXPECT_EQ(j["model"], "my \"odd\" model");
  EXPECT_EQ(j["empty"], "");
  // Ordinary messages are not logfmt: they stay "msg".
  for (const char* text : {"unloaded 'demo'", "loaded models/demo as 'demo' in 3 ms",
                           "ebb serve listening on http://127.0.0.1:1", "request", "Request a=1",
                           "request a=\"unclosed"}) {
    nlohmann::json k;
    EXPECT_FALSE(internal::LogfmtToJson(text, k)) << text;
  }
}

TEST(LogFormat, ParseLogFormatNamesTheChoices) {
  EXPECT_EQ(ParseLogFormat("json"), LogFormat::Json);
  EXPECT_EQ(ParseLogFormat("text"), LogFormat::Text);
  try {
    ParseLogFormat("xml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text or json"), std::string::npos);
  }
}

}  // namespace
}  // namespace ebb
