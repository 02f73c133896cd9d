// The route table (server/routes.h), without a server; tests/http/test_serve_drain.py covers it
// over real HTTP.
#include <gtest/gtest.h>

#include "server/routes.h"

namespace ebb::server {
namespace {

TEST(Routes, ProbeAliasesOfLiteLlmAndKServe) {
  for (const char* p : {"/health", "/health/liveliness", "/v2/health/live"}) {
    EXPECT_EQ(ProbeOf(p), Probe::kLive) << p;
  }
  for (const char* p : {"/ready", "/health/readiness", "/v2/health/ready"}) {
    EXPECT_EQ(ProbeOf(p), Probe::kReady) << p;
  }
  for (const char* p : {"/healthz", "/health/", "/v2/health", "/readyz", ""}) {
    EXPECT_EQ(ProbeOf(p), Probe::kNone) << p;
  }
}

TEST(Routes, OnlyKnownRoutesBecomeLabels) {
  EXPECT_EQ(RouteLabel("/v2/health/ready"), "/v2/health/ready");
  EXPECT_EQ(RouteLabel("/health/liveliness"), "/health/liveliness");
  EXPECT_EQ(RouteLabel("/openai/v1/chat/completions"), "/openai/v1/chat/completions");
  EXPECT_EQ(RouteLabel("/openai/v1/embeddings"), "/openai/v1/embeddings");
  EXPECT_EQ(RouteLabel("/openai/v1/models/some-model"), "/openai/v1/models/{id}");
  EXPECT_EQ(RouteLabel("/v1/models/m/runtime/shrink"), "/v1/models/{id}/runtime/shrink");
  EXPECT_EQ(RouteLabel("/openai/v1/models/m/load"), "other");  // admin routes: /v1 only
  EXPECT_EQ(RouteLabel("/openai/v1/runtime"), "other");
  EXPECT_EQ(RouteLabel("/openai/v1/models/"), "other");
  EXPECT_EQ(RouteLabel("/\xff\xfe"), "other");
}

}  // namespace
}  // namespace ebb::server
