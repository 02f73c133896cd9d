// The admin-only option check of `ebb serve`'s client requests (docs/http_api.md#security-model).
// Its own file pair so that the request parser (openai_request, fuzzed on its own) needs only
// the core option table.
#pragma once

#include <cstdint>
#include <optional>
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

// The admin's value of prefix_cache.max_bytes for a model: the last one in `defaults` (ebb
// serve --option) then `spec` (the models file), or nullopt when the admin set none.
std::optional<uint64_t> AdminPrefixBudget(
    const std::vector<std::pair<std::string, std::string>>& defaults,
    const std::vector<std::pair<std::string, std::string>>* spec);

// The run-option rules of a client's request (docs/http_api.md#security-model), for PATCH
// /v1/models/{id}/runtime and the run options of a load body: throws ApiException 403
// admin_only_option for a key that is not in ebb's option table (an ORT run config entry; some
// name files) or is admin-only, and for prefix_cache.max_bytes above `admin_budget` (the
// admin's value, when the admin set one). A malformed key or value is left for the setter's 400;
// lowering a budget and clearing a key (nullopt: back to the load-time value) are any client's.
void RefuseRaisedRunOptions(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& run,
    std::optional<uint64_t> admin_budget);

}  // namespace ebb::server
