// A client of the running `ebb serve`, for the CLI commands that mirror the SDK against it
// (`ebb ps`, `ebb model ...`, `ebb run`, `ebb chat`).
//
// The address: --url, else $EBB_URL, else the running service's state file (`service.json` in
// $EBB_HOME, else $XDG_STATE_HOME/ebb, else ~/.local/state/ebb; docs/service.md), only when its
// process is alive and is the one the file names. The API key: --api-key, else $EBB_API_KEY.
// Errors: a service error becomes ebb::Error with the service's own message and its "ebb_code"
// (the code the in-process call throws; a body without one: the code its HTTP status maps to);
// an unreachable service is Unavailable naming the address and how to start one.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace httplib {
class Client;
}

namespace ebb::cli {

// Where a running service would be found without --url: $EBB_URL, else the url of a live
// service's state file; nullopt when neither exists.
std::optional<std::string> DiscoverServiceUrl();

class ServiceClient {
 public:
  // `url` empty: DiscoverServiceUrl(), else Unavailable.
  ServiceClient(std::string url, std::string api_key);
  ~ServiceClient();

  const std::string& url() const { return url_; }

  // The JSON answer of a request with an optional JSON body. Throws ebb::Error (see above).
  nlohmann::ordered_json Call(std::string_view method, const std::string& path,
                              const std::optional<nlohmann::ordered_json>& body = std::nullopt);
  // GET /v1/runtime, checked to be ebb's document (an object with a "models" list of objects
  // with a string "id", a "stats" object with limit_bytes, used_bytes and process.rss_bytes, and
  // a "queue" object with its numbers; docs/runtime.schema.json):
  // Unavailable, naming the URL and the field, when it is not (another server, another
  // version), instead of reading fields that are not there.
  // `figures` false: only the models list is checked (`ebb model list` reads nothing else).
  nlohmann::ordered_json Runtime(bool figures = true);
  // POST with "stream": true: calls `on_event` with each server-sent event's JSON (not
  // [DONE]). Throws ebb::Error for an error status or an error event.
  void Stream(const std::string& path, const nlohmann::ordered_json& body,
              const std::function<void(const nlohmann::ordered_json&)>& on_event);

 private:
  std::string url_;
  std::string api_key_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace ebb::cli
