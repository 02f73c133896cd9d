// Which requests a browser may make to `ebb serve`: the DNS-rebinding and cross-origin defence
// (docs/http_api.md#security-model).
//
// A web page the user opens can send requests to 127.0.0.1 (form posts, text/plain fetches
// need no CORS preflight), and through DNS rebinding it can even read the answers under its
// own name. So, before any route runs:
// - the Host header must name the bound address, `localhost`, any IP literal when the service is
//   bound to a wildcard address, or a name the admin allows (--allowed-host; "*": any);
// - a request with an Origin header must come from the service's own origin (the memory page)
//   or an origin the admin allows (--allowed-origin; none by default);
// - a state-changing request (POST, PUT, PATCH, DELETE) with a body must be application/json,
//   which a page can only send after a CORS preflight that this service does not grant.
// CORS headers are sent only for an allowed origin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace ebb::server {

struct BrowserPolicy {
  std::string bound_host = "127.0.0.1";      // --host
  std::vector<std::string> allowed_hosts;    // --allowed-host: names (no port), "*" = any
  std::vector<std::string> allowed_origins;  // --allowed-origin: "scheme://host[:port]", "*"
};

struct RequestFacts {
  std::string method;
  std::string host;          // the Host header ("" when absent)
  std::string origin;        // the Origin header ("" when absent)
  std::string content_type;  // the Content-Type header
  bool has_body = false;     // Content-Length > 0 or chunked
};

// nullopt: allowed. Else a 403 naming what was refused and the flag that allows it.
std::optional<ApiError> CheckBrowserRules(const BrowserPolicy& policy, const RequestFacts& r);

// True when `origin` may read answers (CORS): listed in --allowed-origin, or "*" is.
bool CorsOriginAllowed(const BrowserPolicy& policy, const std::string& origin);

// The name part of a Host header value, lower case: "LocalHost:80" -> "localhost",
// "[::1]:8080" -> "::1".
std::string HostName(const std::string& host_header);

}  // namespace ebb::server
