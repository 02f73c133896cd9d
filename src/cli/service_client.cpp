#include "cli/service_client.h"

#include <httplib.h>

#include <cstdlib>

#include "cli/service_names.h"
#include "ebb/error.h"
#include "server/api_error.h"

namespace ebb::cli {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void ThrowServiceError(int status, const std::string& body) {
  std::string message = "the service answered " + std::to_string(status);
  // The error's own ebb_code when it has one (what the in-process call would throw), else the
  // service's one status table.
  ErrorCode code = server::ErrorCodeOfStatus(status);
  try {
    const Json j = Json::parse(body);
    if (j.contains("error") && j["error"].is_object()) {
      const Json& e = j["error"];
      if (e.contains("message") && e["message"].is_string()) {
        message = e["message"].get<std::string>();
      }
      if (e.contains("ebb_code") && e["ebb_code"].is_string()) {
        code = ErrorCodeFromName(e["ebb_code"].get<std::string>()).value_or(code);
      }
    }
  } catch (const std::exception&) {
    if (!body.empty()) message += ": " + body.substr(0, 200);
  }
  throw Error(code, message);
}

}  // namespace

std::optional<std::string> DiscoverServiceUrl() {
  if (const char* u = std::getenv("EBB_URL"); u != nullptr && *u != '\0') return std::string(u);
  // Only a service that is alive and is the process the state file names (a recycled pid is
  // not ours): ReadRunningService checks both.
  if (auto s = ReadRunningService()) return s->url;
  return std::nullopt;
}

namespace {

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// The key of the service found through its state file, when it was started with one, and only
// for that service's own URL: a key never goes to a server it did not come from (--url
// elsewhere needs --api-key or $EBB_API_KEY given explicitly).
std::string DiscoveredApiKey(const std::string& url) {
  auto s = ReadRunningService();
  if (!s || WithoutTrailingSlash(s->url) != WithoutTrailingSlash(url)) return "";
  return ServiceApiKey(*s);
}

}  // namespace

ServiceClient::ServiceClient(std::string url, std::string api_key)
    : url_(std::move(url)), api_key_(std::move(api_key)) {
  if (url_.empty()) {
    auto found = DiscoverServiceUrl();
    if (!found) {
      throw Error(ErrorCode::Unavailable,
                  "no ebb service is running (no $EBB_URL, and no live service in " +
                      ServiceStateDir().string() +
                      "); start one with `ebb service start --models-dir DIR`, or give --url");
    }
    url_ = *found;
  }
  if (api_key_.empty()) {
    if (const char* k = std::getenv("EBB_API_KEY"); k != nullptr) api_key_ = k;
  }
  url_ = WithoutTrailingSlash(url_);
  if (api_key_.empty()) api_key_ = DiscoveredApiKey(url_);
  http_ = std::make_unique<httplib::Client>(url_);
  if (!http_->is_valid()) {
    throw Error(ErrorCode::InvalidArgument, "'" + url_ +
                                                "' is not a service address; use "
                                                "http://HOST:PORT");
  }
  http_->set_connection_timeout(std::chrono::seconds(5));
  http_->set_read_timeout(std::chrono::seconds(600));
  if (!api_key_.empty()) http_->set_bearer_token_auth(api_key_);
}

ServiceClient::~ServiceClient() = default;

Json ServiceClient::Call(std::string_view method, const std::string& path,
                         const std::optional<Json>& body) {
  httplib::Request req;
  req.method = std::string(method);
  req.path = path;
  if (body) {
    req.body = body->dump();
    req.set_header("Content-Type", "application/json");
  }
  auto res = http_->send(req);
  if (!res) {
    throw Error(ErrorCode::Unavailable, "cannot reach the ebb service at " + url_ + " (" +
                                            httplib::to_string(res.error()) +
                                            "); is it running? (`ebb service status`)");
  }
  if (res->status >= 400) ThrowServiceError(res->status, res->body);
  try {
    return Json::parse(res->body);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::Internal,
                "the service's answer to " + path + " is not JSON: " + std::string(e.what()));
  }
}

Json ServiceClient::Runtime(bool figures) {
  Json rt = Call("GET", "/v1/runtime");
  std::string bad;
  const auto number = [&](const Json& parent, const char* obj, const char* field) {
    if (!bad.empty()) return;
    if (!parent.contains(obj) || !parent[obj].is_object()) {
      bad = std::string("'") + obj + "' is not an object";
    } else if (!parent[obj].contains(field) || !parent[obj][field].is_number()) {
      bad = std::string("'") + obj + "." + field + "' is not a number";
    }
  };
  if (!rt.is_object()) {
    bad = "the answer is not a JSON object";
  } else if (!rt.contains("models") || !rt["models"].is_array()) {
    bad = "'models' is not a list";
  } else {
    for (const Json& m : rt["models"]) {
      if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) {
        bad = "a 'models' entry has no string 'id'";
        break;
      }
    }
    if (figures) {
      number(rt, "stats", "limit_bytes");
      number(rt, "stats", "used_bytes");
      if (bad.empty()) number(rt["stats"], "process", "rss_bytes");
      number(rt, "queue", "running");
      number(rt, "queue", "queued");
    }
  }
  if (!bad.empty()) {
    throw Error(ErrorCode::Unavailable, url_ +
                                            " answered GET /v1/runtime with a document that is "
                                            "not ebb's (" +
                                            bad + "); is " + url_ +
                                            " an ebb service of this version?");
  }
  return rt;
}

void ServiceClient::Stream(const std::string& path, const Json& body,
                           const std::function<void(const Json&)>& on_event) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string buf;
  std::string error_body;
  int status = 0;
  std::optional<Json> error_event;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (status >= 400) {
      error_body.append(data, len);
      return true;
    }
    buf.append(data, len);
    size_t pos;
    while ((pos = buf.find("\n\n")) != std::string::npos) {
      const std::string event = buf.substr(0, pos);
      buf.erase(0, pos + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") continue;
      Json j = Json::parse(payload);
      if (j.contains("error")) {
        error_event = j;
        continue;
      }
      on_event(j);
    }
    return true;
  };
  auto res = http_->send(req);
  if (!res) {
    throw Error(ErrorCode::Unavailable, "cannot reach the ebb service at " + url_ + " (" +
                                            httplib::to_string(res.error()) + ")");
  }
  if (status >= 400 || res->status >= 400) {
    ThrowServiceError(status >= 400 ? status : res->status,
                      error_body.empty() ? res->body : error_body);
  }
  if (error_event) ThrowServiceError(500, error_event->dump());
}

}  // namespace ebb::cli
