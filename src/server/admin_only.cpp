#include "server/admin_only.h"

#include <string_view>

#include "core/admin_options.h"
#include "core/option_parse.h"
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

std::optional<uint64_t> AdminPrefixBudget(
    const std::vector<std::pair<std::string, std::string>>& defaults,
    const std::vector<std::pair<std::string, std::string>>* spec) {
  std::optional<uint64_t> out;
  const auto scan = [&](const std::vector<std::pair<std::string, std::string>>& list) {
    for (const auto& [k, v] : list) {
      if (k != "prefix_cache.max_bytes" && k != "run_options.prefix_cache.max_bytes") continue;
      try {
        out = ParseByteSize(v, k);
      } catch (const Error&) {
        // The load names it.
      }
    }
  };
  scan(defaults);
  if (spec != nullptr) scan(*spec);
  return out;
}

void RefuseRaisedRunOptions(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
    std::optional<uint64_t> admin_budget) {
  for (const auto& [key, value] : run) {
    if (!value) continue;  // back to the load-time value
    try {
      internal::CheckRunOptionEntry(key, *value);
    } catch (const Error&) {
      continue;  // malformed: the setter answers 400 naming it
    }
    if (FindOption(key) == nullptr || internal::IsAdminOnlyOption(key)) {
      throw ApiException(ApiError{
          403, "permission_error",
          "run option '" + internal::EscapeForMessage(key, 200) +
              "' is not one of ebb's run options (an ONNX Runtime run config entry; some name "
              "files): only a request that carries the service's --admin-key may set it "
              "(docs/http_api.md#security-model)",
          "run_options." + key, "admin_only_option", 0});
    }
    if (key != "prefix_cache.max_bytes" || !admin_budget) continue;
    uint64_t wanted = 0;
    try {
      wanted = ParseByteSize(*value, key);
    } catch (const Error&) {
      continue;  // the setter names the bad value
    }
    if (wanted > *admin_budget) {
      throw ApiException(ApiError{
          403, "permission_error",
          "prefix_cache.max_bytes " + std::to_string(wanted) + " is above the budget of " +
              std::to_string(*admin_budget) +
              " bytes the service's admin set for this model: a request may lower it, and only "
              "one that carries the service's --admin-key may raise it; null restores the "
              "load-time value (docs/http_api.md#security-model)",
          "run_options." + key, "admin_only_option", 0});
    }
  }
}

}  // namespace ebb::server
