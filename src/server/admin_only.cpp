#include "server/admin_only.h"

#include <string_view>

#include "core/admin_options.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/options.h"
#include "server/api_error.h"

namespace ebb::server {

void RefuseAdminOnlyOptions(const std::vector<std::pair<std::string, std::string>>& options) {
  for (const auto& [key, value] : options) {
    std::string_view k = key;
    bool admin = false;
    if (k.starts_with("provider_options.")) {
      admin = true;
    } else if (k.starts_with("session_options.")) {
      k.remove_prefix(std::string_view("session_options.").size());
      admin = FindOption(k) == nullptr || internal::IsAdminOnlyOption(k);
    } else if (k.starts_with("run_options.")) {
      k.remove_prefix(std::string_view("run_options.").size());
      admin = FindOption(k) == nullptr || internal::IsAdminOnlyOption(k);
    } else {
      admin = internal::IsAdminOnlyValue(k, value);
    }
    if (!admin) continue;
    if (k == "chat_template") {
      throw ApiException(ApiError{
          403, "permission_error",
          "'chat_template' names a file (" + internal::EscapeForMessage(value, 200) +
              "): a request sends the template's text instead (ebb model load --chat-template "
              "FILE and ebb.connect().load(..., chat_template=FILE) read the file and send its "
              "text); a path is for the service's admin (its --models-file, --option, or a "
              "request that carries its --admin-key) (docs/http_api.md#security-model)",
          key, "admin_only_option", 0});
    }
    throw ApiException(
        ApiError{403, "permission_error",
                 "option '" + key +
                     "' may only be set by the service's admin (ebb serve's command line or its "
                     "--models-file), or by a request that carries its --admin-key; it changes "
                     "process-wide state, names a file, loads code or sizes threads or arenas "
                     "(docs/http_api.md#security-model)",
                 key, "admin_only_option", 0});
  }
}

void RefuseRaisedRunOptions(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
    const std::map<std::string, ModelControls::OptionInForce>& in_force) {
  for (const auto& [key, value] : run) {
    if (!value) continue;  // back to the load-time value
    if (FindOption(key) == nullptr || internal::IsAdminOnlyOption(key)) {
      throw ApiException(ApiError{
          403, "permission_error",
          "run option '" + internal::EscapeForMessage(key, 200) +
              "' is not one of ebb's run options (an ONNX Runtime run config entry; some name "
              "files): only a request that carries the service's --admin-key may set it "
              "(docs/http_api.md#security-model)",
          "run_options." + key, "admin_only_option", 0});
    }
    if (key != "prefix_cache.max_bytes") continue;
    const auto it = in_force.find(key);
    if (it == in_force.end() || it->second.at_load.empty()) continue;
    uint64_t wanted = 0;
    try {
      wanted = ParseByteSize(*value, key);
    } catch (const Error&) {
      continue;  // SetRunOption names the bad value
    }
    const uint64_t at_load = std::stoull(it->second.at_load);
    if (wanted > at_load) {
      throw ApiException(
          ApiError{403, "permission_error",
                   "prefix_cache.max_bytes " + std::to_string(wanted) +
                       " is above the model's load-time budget of " + std::to_string(at_load) +
                       " bytes: a request may lower a memory budget, and only one that carries the "
                       "service's --admin-key may raise it; null restores the load-time value "
                       "(docs/http_api.md#security-model)",
                   "run_options." + key, "admin_only_option", 0});
    }
  }
}

}  // namespace ebb::server
