// Which keys of the option table only the admin may set (docs/http_api.md#security-model).
//
// `ebb serve` takes them from its command line and its models file, never from a client
// request: they change process-wide state (memory.limit, the shared arena, the environment's
// allocators), name a file or folder (model_cache.dir, profile_file_prefix), load code
// (execution_provider), or size threads and arenas. The list sits beside the table in
// option_table.cpp; `ebb options` shows it as the "admin only" column.
#pragma once

#include <string_view>

namespace ebb::internal {

// True for a key of the table marked admin-only.
bool IsAdminOnlyOption(std::string_view key);
// True when a request may not set `key` to `value`: an admin-only key, or chat_template naming a
// file (the template text itself is any client's to send).
bool IsAdminOnlyValue(std::string_view key, std::string_view value);

}  // namespace ebb::internal
