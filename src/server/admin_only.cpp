#include "server/admin_only.h"

#include <string_view>

#include "core/admin_options.h"
#include "core/strings.h"
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
      admin = internal::IsAdminOnlyOption(k);
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

}  // namespace ebb::server
