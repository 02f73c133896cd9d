#include "server/models_file.h"

#include "core/files.h"
#include "core/json_util.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "server/api_error.h"

namespace ebb::server {

using Json = nlohmann::ordered_json;

std::string JsonScalarText(const Json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number()) return nlohmann::json(v.get<double>()).dump();
  ThrowBadField(param, "'" + param + "' must be a string, a number or a boolean");
}

OptionList OptionListFromJson(const Json& body) {
  OptionList out;
  auto object = [&](const char* name) -> const Json* {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    if (!it->is_object()) ThrowBadField(name, std::string("'") + name + "' must be an object");
    return &*it;
  };
  if (const Json* s = object("session_options")) {
    for (const auto& [k, v] : s->items()) {
      out.emplace_back("session_options." + k, JsonScalarText(v, "session_options." + k));
    }
  }
  if (const Json* p = object("provider_options")) {
    for (const auto& [ep, kv] : p->items()) {
      if (!kv.is_object()) {
        ThrowBadField("provider_options." + ep,
                      "'provider_options." + ep + "' must be an object of key/value pairs");
      }
      for (const auto& [k, v] : kv.items()) {
        const std::string key = "provider_options." + ep + "." + k;
        out.emplace_back(key, JsonScalarText(v, key));
      }
    }
  }
  if (const Json* r = object("run_options")) {
    for (const auto& [k, v] : r->items()) {
      out.emplace_back("run_options." + k, JsonScalarText(v, "run_options." + k));
    }
  }
  if (const Json* o = object("options")) {
    for (const auto& [k, v] : o->items()) out.emplace_back(k, JsonScalarText(v, "options." + k));
  }
  // "chat_template": the option of that name (a Jinja file, or the template text itself).
  if (auto it = body.find("chat_template"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      ThrowBadField("chat_template",
                    "'chat_template' must be a string: the template's text (a Jinja chat "
                    "template, as tokenizer_config.json's), or in the models file a file");
    }
    out.emplace_back("chat_template", it->get<std::string>());
  }
  // Check every key now, so that a typo is reported naming it rather than as a failed load.
  ModelOptions probe;
  for (const auto& [k, v] : out) {
    try {
      probe.Set(k, v);
    } catch (const Error& e) {
      ThrowBadField(k, e.what());
    }
  }
  return out;
}

std::optional<KeepAlive> KeepAliveFromJson(const Json& body) {
  auto it = body.find("keep_alive");
  if (it == body.end() || it->is_null()) return std::nullopt;
  try {
    if (it->is_number_integer()) return ParseKeepAlive(std::to_string(it->get<int64_t>()));
    if (it->is_string()) return ParseKeepAlive(it->get<std::string>());
  } catch (const Error& e) {
    ThrowBadField("keep_alive", e.what());
  }
  ThrowBadField("keep_alive", "'keep_alive' must be a duration (\"5m\") or seconds");
}

std::map<std::string, ManagedModelSpec> ReadModelsFile(const std::filesystem::path& file) {
  const std::string text = internal::ReadRegularFile(file, 16u << 20, "the models file");
  const Json j = internal::ParseJsonDocument<Json>(text, file.string());
  const std::string where = file.string();
  if (!j.is_object() || !j.contains("models") || !j["models"].is_object()) {
    throw Error(ErrorCode::InvalidArgument,
                where + ": expected {\"models\": {\"ID\": {\"path\": \"DIR\", ...}}}");
  }
  static constexpr std::string_view kTopKeys[] = {"models"};
  for (const auto& [k, v] : j.items()) {
    if (k != "models") {
      throw Error(ErrorCode::InvalidArgument,
                  where + ": unknown key \"" + k + "\"" + internal::DidYouMean(k, kTopKeys) +
                      "; the file is {\"models\": {\"ID\": {\"path\": \"DIR\", ...}}}");
    }
  }
  // Every key an entry may have: a typo ("pinn", "keep-alive") is an error at start, not a
  // setting silently ignored.
  static constexpr std::string_view kEntryKeys[] = {
      "path",       "options", "session_options", "provider_options", "run_options",
      "keep_alive", "pin",     "chat_template"};
  std::map<std::string, ManagedModelSpec> out;
  for (const auto& [id, m] : j["models"].items()) {
    const std::string at = where + ": models." + id;
    if (!m.is_object() || !m.contains("path") || !m["path"].is_string()) {
      throw Error(ErrorCode::InvalidArgument, at + " needs \"path\": the model folder");
    }
    for (const auto& [k, v] : m.items()) {
      bool known = false;
      for (std::string_view e : kEntryKeys) known |= k == e;
      if (!known) {
        std::string keys;
        for (std::string_view e : kEntryKeys) keys += (keys.empty() ? "" : ", ") + std::string(e);
        throw Error(ErrorCode::InvalidArgument, at + ": unknown key \"" + k + "\"" +
                                                    internal::DidYouMean(k, kEntryKeys) +
                                                    "; keys: " + keys);
      }
    }
    ManagedModelSpec spec;
    spec.path = m["path"].get<std::string>();
    if (spec.path.is_relative()) spec.path = file.parent_path() / spec.path;
    // The folder is checked now, so that a wrong path fails the start, not the first request.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(spec.path / "genai_config.json", ec)) {
      throw Error(ErrorCode::InvalidArgument,
                  at + ".path: " + spec.path.string() +
                      (std::filesystem::is_directory(spec.path, ec)
                           ? " has no genai_config.json (not an onnxruntime-genai model folder)"
                           : " does not exist or is not a folder"));
    }
    try {
      spec.options = OptionListFromJson(m);
      // A chat template file is relative to the models file, as "path" is.
      for (auto& [k, v] : spec.options) {
        if (k != "chat_template" || internal::IsChatTemplateText(v)) continue;
        if (std::filesystem::path(v).is_relative()) v = (file.parent_path() / v).string();
      }
      spec.keep_alive = KeepAliveFromJson(m);
      if (m.contains("pin")) {
        if (!m["pin"].is_boolean()) {
          throw Error(ErrorCode::InvalidArgument, "\"pin\" must be true or false");
        }
        spec.pin = m["pin"].get<bool>();
      }
    } catch (const ApiException& e) {
      throw Error(ErrorCode::InvalidArgument, at + ": " + e.error.message);
    } catch (const Error& e) {
      throw Error(e.code(), at + ": " + e.what());
    }
    out.emplace(id, std::move(spec));
  }
  return out;
}

}  // namespace ebb::server
