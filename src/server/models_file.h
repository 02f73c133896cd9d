// Model options written as JSON, as the load endpoint and the serve's models file take them:
//   {"session_options": {K: V}, "provider_options": {EP: {K: V}}, "run_options": {K: V},
//    "options": {ebb key: V}, "chat_template": TEXT}
// and the models file of `ebb serve --models-file F`:
//   {"models": {"ID": {"path": "DIR", <the option objects above>, "keep_alive": "10m",
//                      "pin": true, "chat_template": "FILE.jinja"}}}
// Relative paths ("path", a chat_template file) are relative to the file's folder.
// "chat_template" is the option of that name: a Jinja file or the template's text.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ebb/model_manager.h"

namespace ebb::server {

// A JSON scalar as option text ("true", "40", "0.5", or the string). Throws ApiException (400)
// naming `param` for objects and arrays.
std::string JsonScalarText(const nlohmann::ordered_json& v, const std::string& param);

// The option objects of `body` as full keys, in the order session, provider, run, ebb; every
// key is checked with ModelOptions::Set. Throws ApiException (400) naming the key.
OptionList OptionListFromJson(const nlohmann::ordered_json& body);

// The "keep_alive" field of `body` (a duration string or seconds; absent or null: none).
// Throws ApiException (400) naming keep_alive.
std::optional<KeepAlive> KeepAliveFromJson(const nlohmann::ordered_json& body);

// Reads a models file. Throws ebb::Error: NotFound (no file), InvalidArgument naming the file
// and the field.
std::map<std::string, ManagedModelSpec> ReadModelsFile(const std::filesystem::path& file);

}  // namespace ebb::server
