// The CLI's client of `ebb serve` (src/cli/service_client.h) against a canned HTTP server: every
// ebb::ErrorCode comes back as the code the service's "ebb_code" names, whatever the status
// says (issue 22, Done-when 4), a body without one takes the status table's code, and
// Runtime() accepts /v1/runtime's one memory block ("stats") and refuses a document without it.
#include "cli/service_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

#include "ebb/error.h"

namespace ebb::cli {
namespace {

constexpr ErrorCode kAll[] = {ErrorCode::InvalidArgument,   ErrorCode::NotFound,
                              ErrorCode::ResourceExhausted, ErrorCode::FailedPrecondition,
                              ErrorCode::Cancelled,         ErrorCode::DeadlineExceeded,
                              ErrorCode::Unavailable,       ErrorCode::Internal};

// A loopback server answering GET /e/<status>/<ebb_code> with that status and an OpenAI error
// body carrying that ebb_code ("-" for none), and GET /v1/runtime with `runtime_body`.
class CannedService {
 public:
  CannedService() {
    server_.Get(R"(/e/(\d+)/([a-z_-]+))", [](const httplib::Request& req, httplib::Response& res) {
      res.status = std::stoi(req.matches[1]);
      nlohmann::json err = {{"message", "canned " + std::string(req.matches[2])},
                            {"type", "invalid_request_error"},
                            {"param", nullptr},
                            {"code", "invalid_value"}};
      if (req.matches[2] != "-") err["ebb_code"] = std::string(req.matches[2]);
      res.set_content(nlohmann::json{{"error", err}}.dump(), "application/json");
    });
    server_.Get("/v1/runtime", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(runtime_body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~CannedService() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string runtime_body;

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

ErrorCode CodeOf(ServiceClient& c, const std::string& path) {
  try {
    c.Call("GET", path);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << path << " did not throw";
  return ErrorCode::Internal;
}

TEST(ServiceClient, EveryErrorMapsByItsEbbCodeWhateverTheStatus) {
  CannedService svc;
  ServiceClient c(svc.url(), "");
  for (ErrorCode code : kAll) {
    const std::string name(ErrorCodeName(code));
    // 400 and 500 disagree with most codes: the ebb_code wins.
    EXPECT_EQ(CodeOf(c, "/e/400/" + name), code) << name;
    EXPECT_EQ(CodeOf(c, "/e/500/" + name), code) << name;
  }
  try {
    c.Call("GET", "/e/409/resource_exhausted");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "canned resource_exhausted") << "the service's own message";
  }
}

TEST(ServiceClient, WithoutAnEbbCodeTheStatusTableDecides) {
  CannedService svc;
  ServiceClient c(svc.url(), "");
  EXPECT_EQ(CodeOf(c, "/e/404/-"), ErrorCode::NotFound);
  EXPECT_EQ(CodeOf(c, "/e/429/-"), ErrorCode::ResourceExhausted);
  EXPECT_EQ(CodeOf(c, "/e/499/-"), ErrorCode::Cancelled);
  EXPECT_EQ(CodeOf(c, "/e/507/-"), ErrorCode::ResourceExhausted);
  // A name that is no ErrorCode's falls back to the status too.
  EXPECT_EQ(CodeOf(c, "/e/504/resource-exhausted"), ErrorCode::DeadlineExceeded);
}

TEST(ServiceClient, RuntimeReadsTheOneStatsBlockAndRefusesADocumentWithoutIt) {
  CannedService svc;
  ServiceClient c(svc.url(), "");
  svc.runtime_body = R"({"stats": {"process": {"rss_bytes": 5}, "limit_bytes": 0,
                         "used_bytes": 3}, "queue": {"running": 0, "queued": 0},
                         "models": [{"id": "m"}]})";
  EXPECT_EQ(c.Runtime()["stats"]["used_bytes"], 3);
  // The document before issue 22: "memory" and "process" beside "stats"-less figures.
  svc.runtime_body = R"({"memory": {"limit_bytes": 0, "used_bytes": 3},
                         "process": {"rss_bytes": 5}, "queue": {"running": 0, "queued": 0},
                         "models": []})";
  try {
    c.Runtime();
    FAIL() << "a document without stats was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unavailable);
    EXPECT_NE(std::string(e.what()).find("'stats' is not an object"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(c.Runtime(/*figures=*/false)) << "`ebb model list` reads only the models";
}

}  // namespace
}  // namespace ebb::cli
