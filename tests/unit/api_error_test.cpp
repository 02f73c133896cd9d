// The service's error bodies carry the ebb::ErrorCode as "ebb_code" (issue 22 item 5): every code
// survives the trip ebb::Error -> HTTP body -> the clients' mapping, and an error without one
// (a route's own 4xx) gets its code from the one status table.
#include "server/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ebb::server {
namespace {

constexpr ErrorCode kAll[] = {ErrorCode::InvalidArgument,   ErrorCode::NotFound,
                              ErrorCode::ResourceExhausted, ErrorCode::FailedPrecondition,
                              ErrorCode::Cancelled,         ErrorCode::DeadlineExceeded,
                              ErrorCode::Unavailable,       ErrorCode::Internal};

TEST(ApiError, EveryErrorCodeRoundTripsThroughTheBodysEbbCode) {
  for (ErrorCode c : kAll) {
    const ApiError a = FromError(Error(c, "m"));
    const auto j = nlohmann::json::parse(a.ToJson());
    const std::string name = j["error"]["ebb_code"];
    EXPECT_EQ(name, ErrorCodeName(c));
    EXPECT_EQ(ErrorCodeFromName(name), c) << name;
    // The status the code is sent with maps back to the same code, so a client that reads only
    // the status (an older one) agrees too.
    EXPECT_EQ(ErrorCodeOfStatus(a.status), c) << a.status;
  }
  EXPECT_EQ(ErrorCodeFromName("resource-exhausted"), std::nullopt);
  EXPECT_EQ(ErrorCodeFromName(""), std::nullopt);
}

TEST(ApiError, RouteErrorsWithoutACodeTakeTheStatusTablesAndBadFieldsCanNameTheirs) {
  EXPECT_EQ(ErrorCodeOfStatus(429), ErrorCode::ResourceExhausted) << "the queue is full";
  EXPECT_EQ(ErrorCodeOfStatus(499), ErrorCode::Cancelled);
  EXPECT_EQ(ErrorCodeOfStatus(413), ErrorCode::InvalidArgument);
  EXPECT_EQ(ErrorCodeOfStatus(403), ErrorCode::FailedPrecondition);
  EXPECT_EQ(ErrorCodeOfStatus(418), ErrorCode::Internal);
  const ApiError queue{429, "rate_limit_error", "queue full", std::nullopt, "queue_full", 1};
  EXPECT_EQ(nlohmann::json::parse(queue.ToJson())["error"]["ebb_code"], "resource_exhausted");
  try {
    ThrowBadField("model", "an embedding model", "wrong_model_kind", ErrorCode::FailedPrecondition);
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error.status, 400);
    EXPECT_EQ(nlohmann::json::parse(e.error.ToJson())["error"]["ebb_code"], "failed_precondition");
  }
}

}  // namespace
}  // namespace ebb::server
