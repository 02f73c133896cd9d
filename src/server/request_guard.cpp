#include "server/request_guard.h"

#include <algorithm>
#include <cctype>

#include "platform/net.h"

namespace ebb::server {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsIpLiteral(const std::string& name) { return platform::IsNumericAddress(name); }

bool IsWildcard(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty();
}

bool Listed(const std::vector<std::string>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& x) { return x == "*" || Lower(x) == value; });
}

ApiError Forbidden(std::string message, std::string code) {
  return ApiError{403, "permission_error", std::move(message), std::nullopt, std::move(code), 0};
}

// The media type of a Content-Type value, lower case, without parameters.
std::string MediaType(const std::string& content_type) {
  std::string t = Lower(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.erase(0, 1);
  return t;
}

}  // namespace

std::string HostName(const std::string& host_header) {
  std::string h = Lower(host_header);
  if (!h.empty() && h.front() == '[') {
    const auto close = h.find(']');
    return close == std::string::npos ? h : h.substr(1, close - 1);
  }
  const auto colon = h.find(':');
  if (colon != std::string::npos && h.find(':', colon + 1) == std::string::npos) {
    h.resize(colon);
  }
  while (!h.empty() && h.back() == '.') h.pop_back();  // "localhost." is "localhost"
  return h;
}

bool CorsOriginAllowed(const BrowserPolicy& policy, const std::string& origin) {
  return !origin.empty() && Listed(policy.allowed_origins, Lower(origin));
}

std::optional<ApiError> CheckBrowserRules(const BrowserPolicy& policy, const RequestFacts& r) {
  // 1. Host: a rebinding page's requests carry its own name.
  if (!r.host.empty()) {
    const std::string name = HostName(r.host);
    std::string bound = Lower(policy.bound_host);
    if (!bound.empty() && bound.front() == '[') bound = bound.substr(1, bound.size() - 2);
    const bool ok = name == bound || name == "localhost" ||
                    (IsWildcard(bound) && IsIpLiteral(name)) || Listed(policy.allowed_hosts, name);
    if (!ok) {
      return Forbidden("the Host '" + r.host.substr(0, 100) + "' is not this service's address (" +
                           policy.bound_host +
                           " or localhost); a web page may be trying to reach it by DNS "
                           "rebinding. To serve under that name, start ebb serve with "
                           "--allowed-host NAME",
                       "host_not_allowed");
    }
  }
  // 2. Origin: the service's own pages, or what the admin allows.
  if (!r.origin.empty()) {
    const std::string origin = Lower(r.origin);
    const bool same = !r.host.empty() && origin == "http://" + Lower(r.host);
    if (!same && !CorsOriginAllowed(policy, r.origin)) {
      return Forbidden("requests from the web origin '" + r.origin.substr(0, 100) +
                           "' are not allowed; to let a web app at that origin use this "
                           "service, start ebb serve with --allowed-origin ORIGIN",
                       "origin_not_allowed");
    }
  }
  // 3. State-changing requests: JSON only, so that no "simple" cross-site request (a form,
  // text/plain) ever runs.
  const bool changes =
      r.method == "POST" || r.method == "PUT" || r.method == "PATCH" || r.method == "DELETE";
  if (changes && r.has_body && MediaType(r.content_type) != "application/json") {
    return ApiError{415,
                    "invalid_request_error",
                    "a " + r.method + " body must be JSON with 'Content-Type: application/json'" +
                        (r.content_type.empty() ? std::string(" (none was sent)")
                                                : " (not '" + r.content_type.substr(0, 100) + "')"),
                    std::nullopt,
                    "unsupported_media_type",
                    0};
  }
  return std::nullopt;
}

}  // namespace ebb::server
