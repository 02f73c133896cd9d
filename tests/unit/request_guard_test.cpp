// The browser rules of ebb serve (server/request_guard.h) and the admin-only option check
// (server/admin_only.h), without a server; tests/http/test_serve_security.py covers them over
// real HTTP.
#include "server/request_guard.h"

#include <gtest/gtest.h>

#include "core/admin_options.h"
#include "server/admin_only.h"

namespace ebb::server {
namespace {

RequestFacts Get(std::string host, std::string origin = "") {
  return RequestFacts{"GET", std::move(host), std::move(origin), "", false};
}

TEST(RequestGuard, HostNameDropsPortBracketsCaseAndTrailingDot) {
  EXPECT_EQ(HostName("LocalHost:8080"), "localhost");
  EXPECT_EQ(HostName("localhost."), "localhost");
  EXPECT_EQ(HostName("[::1]:11435"), "::1");
  EXPECT_EQ(HostName("127.0.0.1"), "127.0.0.1");
}

TEST(RequestGuard, HostMustBeTheBoundAddressLocalhostOrAllowed) {
  BrowserPolicy p;
  EXPECT_FALSE(CheckBrowserRules(p, Get("127.0.0.1:11435")));
  EXPECT_FALSE(CheckBrowserRules(p, Get("localhost:11435")));
  EXPECT_FALSE(CheckBrowserRules(p, Get("")));  // HTTP/1.0 without Host: not a browser
  auto e = CheckBrowserRules(p, Get("attacker.example:11435"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 403);
  EXPECT_EQ(e->code, "host_not_allowed");
  EXPECT_NE(e->message.find("--allowed-host"), std::string::npos);
  EXPECT_TRUE(CheckBrowserRules(p, Get("10.0.0.5:11435")));  // another IP than the bound one
  p.allowed_hosts = {"ebb.internal"};
  EXPECT_FALSE(CheckBrowserRules(p, Get("EBB.internal:80")));
  p.bound_host = "0.0.0.0";  // a wildcard bind: any IP literal, never a name
  EXPECT_FALSE(CheckBrowserRules(p, Get("10.0.0.5:11435")));
  EXPECT_FALSE(CheckBrowserRules(p, Get("[fe80::1]:11435")));
  EXPECT_TRUE(CheckBrowserRules(p, Get("attacker.example")));
}

TEST(RequestGuard, OriginMustBeTheServicesOwnOrAllowed) {
  BrowserPolicy p;
  EXPECT_FALSE(CheckBrowserRules(p, Get("127.0.0.1:5", "http://127.0.0.1:5")));
  auto e = CheckBrowserRules(p, Get("127.0.0.1:5", "http://attacker.example"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "origin_not_allowed");
  EXPECT_TRUE(CheckBrowserRules(p, Get("127.0.0.1:5", "null")));
  EXPECT_TRUE(CheckBrowserRules(p, Get("127.0.0.1:5", "http://127.0.0.1:6")));
  EXPECT_FALSE(CorsOriginAllowed(p, "http://app.example"));
  p.allowed_origins = {"http://app.example"};
  EXPECT_FALSE(CheckBrowserRules(p, Get("127.0.0.1:5", "http://app.example")));
  EXPECT_TRUE(CorsOriginAllowed(p, "http://app.example"));
  EXPECT_FALSE(CorsOriginAllowed(p, "http://app.example.evil"));
}

TEST(RequestGuard, StateChangingBodiesMustBeJson) {
  BrowserPolicy p;
  auto post = [](std::string type, bool body) {
    return RequestFacts{"POST", "127.0.0.1", "", std::move(type), body};
  };
  EXPECT_FALSE(CheckBrowserRules(p, post("application/json", true)));
  EXPECT_FALSE(CheckBrowserRules(p, post("Application/JSON; charset=utf-8", true)));
  EXPECT_FALSE(CheckBrowserRules(p, post("", false)));  // no body: nothing to misread
  for (const char* t :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    auto e = CheckBrowserRules(p, post(t, true));
    ASSERT_TRUE(e) << t;
    EXPECT_EQ(e->status, 415) << t;
  }
  RequestFacts get{"GET", "127.0.0.1", "", "text/plain", true};
  EXPECT_FALSE(CheckBrowserRules(p, get));
}

TEST(AdminOnlyOptions, ClientRequestsGet403NamingTheKey) {
  EXPECT_TRUE(internal::IsAdminOnlyOption("memory.limit"));
  EXPECT_TRUE(internal::IsAdminOnlyOption("model_cache.dir"));
  EXPECT_TRUE(internal::IsAdminOnlyOption("profile_file_prefix"));
  EXPECT_TRUE(internal::IsAdminOnlyOption("custom_ops_library"));  // loads code
  EXPECT_FALSE(internal::IsAdminOnlyOption("top_k"));
  EXPECT_FALSE(internal::IsAdminOnlyOption("kv_cache.max_bytes"));
  EXPECT_NO_THROW(RefuseAdminOnlyOptions(
      {{"kv_cache.max_bytes", "1MiB"}, {"session_options.enable_cpu_mem_arena", "0"}}));
  for (const char* key :
       {"memory.limit", "session_options.profile_file_prefix", "session_options.custom_ops_library",
        "session_options.intra_op_num_threads", "session_options.session.some_ort_entry",
        "provider_options.cuda.x"}) {
    try {
      RefuseAdminOnlyOptions({{key, "1"}});
      ADD_FAILURE() << key << " was accepted";
    } catch (const ApiException& e) {
      EXPECT_EQ(e.error.status, 403) << key;
      EXPECT_EQ(e.error.param, key);
      EXPECT_NE(e.error.message.find(key), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ebb::server
