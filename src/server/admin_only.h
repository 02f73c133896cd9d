// The admin-only option check of `ebb serve`'s client requests (docs/http_api.md#security-model).
// Its own file pair so that the request parser (openai_request, fuzzed on its own) needs only
// the core option table.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ebb/model_controls.h"

namespace ebb::server {

// Throws ApiException (403 permission_error, param and message naming the key) when `options`
// (from a client request) holds a key only the admin may set: an admin-only key of the option
// table (core/admin_options.h), any provider option, or a session option that is not in the
// table (ORT's config entries, some of which name files), or chat_template naming a file rather
// than carrying the template's text. The command line and the models file are the admin's and
// are not checked.
void RefuseAdminOnlyOptions(const std::vector<std::pair<std::string, std::string>>& options);

// The run-option rules of a client's PATCH /v1/models/{id}/runtime (docs/http_api.md): throws
// ApiException 403 admin_only_option for a key that is not in ebb's option table (an ORT run
// config entry; some name files), an admin-only key, or a budget (prefix_cache.max_bytes)
// raised above its load-time value in `in_force`. Lowering a budget and clearing a key
// (nullopt: back to the load-time value) are any client's.
void RefuseRaisedRunOptions(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
    const std::map<std::string, ModelControls::OptionInForce>& in_force);

}  // namespace ebb::server
