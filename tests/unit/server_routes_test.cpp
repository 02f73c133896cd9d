// The route table (server/routes.h) and the admission's readiness (server/admission.h), without
// a server; tests/http/test_serve_drain.py covers both over real HTTP.
#include <gtest/gtest.h>

#include <thread>

#include "server/admission.h"
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
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix"), "/v1/models/{id}/prefix");
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix/drop"), "/v1/models/{id}/prefix/drop");
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix/other"), "other");
  EXPECT_EQ(RouteLabel("/openai/v1/models/m/load"), "other");  // admin routes: /v1 only
  EXPECT_EQ(RouteLabel("/openai/v1/runtime"), "other");
  EXPECT_EQ(RouteLabel("/openai/v1/models/"), "other");
  EXPECT_EQ(RouteLabel("/\xff\xfe"), "other");
}

TEST(AdmissionReadiness, StalledOnlyWhileWorkIsPendingWithoutProgress) {
  Admission a(1, 4, std::chrono::milliseconds(100));
  EXPECT_TRUE(a.Check().ready);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(a.Check().ready) << "idle is not stalled";
  {
    Admission::Ticket t = a.Enter();
    EXPECT_TRUE(a.Check().ready) << "just admitted";
    for (int i = 0; i < 4; ++i) {  // progress faster than the timeout keeps it ready
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      t.Progress();
      EXPECT_TRUE(a.Check().ready);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const Readiness r = a.Check();
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.status, "stalled");
    EXPECT_NE(r.reason.find("1 run and 0 wait"), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(a.Check().ready) << "the request ended";
  a.Drain();
  EXPECT_EQ(a.Check().status, "draining");
}

TEST(AdmissionReadiness, ZeroTimeoutNeverStalls) {
  Admission a(1, 0, std::chrono::milliseconds(0));
  Admission::Ticket t = a.Enter();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(a.Check().ready);
}

}  // namespace
}  // namespace ebb::server
