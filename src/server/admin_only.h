// The admin-only option check of `ebb serve`'s client requests (docs/http_api.md#security-model).
// Its own file pair so that the request parser (openai_request, fuzzed on its own) needs only
// the core option table.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ebb::server {

// Throws ApiException (403 permission_error, param and message naming the key) when `options`
// (from a client request) holds a key only the admin may set: an admin-only key of the option
// table (core/admin_options.h), any provider option, or a session option that is not in the
// table (ORT's config entries, some of which name files), or chat_template naming a file rather
// than carrying the template's text. The command line and the models file are the admin's and
// are not checked.
void RefuseAdminOnlyOptions(const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace ebb::server
