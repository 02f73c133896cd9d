#include "server/ollama_request.h"

#include <nlohmann/json.hpp>
#include <random>

#include "constrain/json_schema.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace ebb::server {
namespace {

using Json = nlohmann::json;

const Json* Field(const Json& j, const std::string& name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string String(const Json& j, const std::string& name, bool required) {
  const Json* v = Field(j, name);
  if (v == nullptr) {
    if (required) ThrowBadField(name, "'" + name + "' is required", "missing");
    return "";
  }
  if (!v->is_string()) ThrowBadField(name, "'" + name + "' must be a string");
  return v->get<std::string>();
}

bool Bool(const Json& j, const std::string& name, bool dflt) {
  const Json* v = Field(j, name);
  if (v == nullptr) return dflt;
  if (!v->is_boolean()) ThrowBadField(name, "'" + name + "' must be true or false");
  return v->get<bool>();
}

double Number(const Json& v, const std::string& param) {
  if (!v.is_number()) ThrowBadField(param, "'" + param + "' must be a number");
  return v.get<double>();
}

std::string NumberText(const Json& v, const std::string& param) {
  Number(v, param);
  return v.is_number_float() ? Json(v.get<double>()).dump() : v.dump();
}

// A field ebb does not support, refused when it asks for something (a non-empty value).
void Refuse(const Json& j, const std::string& name, const std::string& why) {
  const Json* v = Field(j, name);
  if (v == nullptr) return;
  const bool empty = (v->is_string() && v->get<std::string>().empty()) ||
                     (v->is_array() && v->empty()) || (v->is_object() && v->empty()) ||
                     (v->is_boolean() && !v->get<bool>());
  if (!empty) ThrowBadField(name, "'" + name + "' is not supported by ebb: " + why, "unsupported");
}

std::optional<KeepAlive> GetKeepAlive(const Json& j) {
  const Json* v = Field(j, "keep_alive");
  if (v == nullptr) return std::nullopt;
  try {
    if (v->is_number_integer()) return ParseKeepAlive(std::to_string(v->get<int64_t>()));
    if (v->is_number()) {
      return ParseKeepAlive(std::to_string(static_cast<int64_t>(v->get<double>())));
    }
    if (v->is_string()) return ParseKeepAlive(v->get<std::string>());
  } catch (const Error& e) {
    ThrowBadField("keep_alive", e.what());
  }
  ThrowBadField("keep_alive", "'keep_alive' must be a duration string (\"5m\") or seconds");
}

std::string ModelField(const Json& j) {
  std::string m = String(j, "model", false);
  if (m.empty()) m = String(j, "name", false);  // the older field
  if (m.empty()) ThrowBadField("model", "'model' is required", "missing");
  return OllamaModelId(std::move(m));
}

// Ollama options that change nothing when left at these values: not named as ignored.
bool IsNeutral(const std::string& key, const Json& v) {
  if (!v.is_number()) return false;
  const double x = v.get<double>();
  return (key == "min_p" && x == 0) || (key == "typical_p" && x == 1) ||
         (key == "tfs_z" && x == 1) || (key == "mirostat" && x == 0);
}

// Maps Ollama's `options` onto ebb's request keys.
void MapOptions(const Json& j, OllamaGenerateRequest& r) {
  const Json* o = Field(j, "options");
  if (o == nullptr) return;
  if (!o->is_object()) ThrowBadField("options", "'options' must be an object");
  for (const auto& [k, v] : o->items()) {
    if (v.is_null()) continue;
    const std::string param = "options." + k;
    if (k == "temperature") {
      const double t = Number(v, param);
      r.options.emplace_back("temperature", NumberText(v, param));
      r.sampled = t > 0;
      r.options.emplace_back("do_sample", t > 0 ? "true" : "false");
    } else if (k == "top_k" || k == "top_p" || k == "presence_penalty" ||
               k == "frequency_penalty") {
      r.options.emplace_back(k, NumberText(v, param));
    } else if (k == "repeat_penalty") {
      r.options.emplace_back("repetition_penalty", NumberText(v, param));
    } else if (k == "seed") {
      if (!v.is_number_integer()) ThrowBadField(param, "'" + param + "' must be an integer");
      int64_t seed = v.get<int64_t>();
      if (seed < 0) {
        // Ollama: a negative seed is a random one.
        std::random_device rd;
        seed = static_cast<int64_t>((static_cast<uint64_t>(rd()) << 31) ^ rd()) & INT64_MAX;
      }
      r.options.emplace_back("seed", std::to_string(seed));
    } else if (k == "num_predict") {
      if (!v.is_number_integer()) ThrowBadField(param, "'" + param + "' must be an integer");
      const int64_t n = v.get<int64_t>();
      // -1 (infinite) and -2 (fill the context): until max_length, as 0 is in ebb.
      if (n > 0) {
        r.options.emplace_back("max_new_tokens", std::to_string(std::min<int64_t>(n, INT32_MAX)));
      }
    } else if (k == "num_ctx") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        ThrowBadField(param, "'" + param + "' must be a positive number of tokens");
      }
      r.num_ctx = static_cast<int32_t>(std::min<int64_t>(v.get<int64_t>(), INT32_MAX));
    } else if (k == "stop") {
      if (v.is_string()) {
        r.stop.push_back(v.get<std::string>());
      } else if (v.is_array()) {
        for (const auto& s : v) {
          if (!s.is_string()) ThrowBadField(param, "'" + param + "' must be a list of strings");
          r.stop.push_back(s.get<std::string>());
        }
      } else {
        ThrowBadField(param, "'" + param + "' must be a string or a list of strings");
      }
      for (const auto& s : r.stop) {
        if (s.empty()) ThrowBadField(param, "'" + param + "' must not hold an empty string");
      }
    } else if (!IsNeutral(k, v)) {
      // num_thread (ebb: intra_op_num_threads, set by the admin at load), num_gpu (the
      // execution provider, at load), use_mmap (ebb maps cached weights itself), min_p,
      // mirostat, num_batch, num_keep, ...: nothing per request honours them.
      r.ignored.push_back(k);
    }
  }
}

std::vector<ChatMessage> Messages(const Json& j) {
  const Json* v = Field(j, "messages");
  if (v == nullptr) return {};
  if (!v->is_array()) ThrowBadField("messages", "'messages' must be a list of messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& m = (*v)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) ThrowBadField(p, "'" + p + "' must be an object {role, content}");
    Refuse(m, "images", "images need a vision model, which ebb does not run (" + p + ".images)");
    Refuse(m, "tool_calls", "tool calling is not supported yet (" + p + ".tool_calls)");
    ChatMessage msg;
    msg.role = String(m, "role", true);
    msg.content = String(m, "content", false);
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace

std::string OllamaModelId(std::string name) {
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.ends_with(kLatest)) {
    name.resize(name.size() - kLatest.size());
  }
  return name;
}

OllamaGenerateRequest ParseOllamaGenerate(std::string_view body, bool chat) {
  const Json j = ParseJsonObjectBody(body);
  OllamaGenerateRequest r;
  r.chat = chat;
  r.model = ModelField(j);
  r.stream = Bool(j, "stream", true);
  r.keep_alive = GetKeepAlive(j);
  // format: "json" (a JSON object, as Ollama's docs describe it) or a JSON Schema; compiled
  // here so that an unsupported keyword is a 400 naming it.
  if (const Json* f = Field(j, "format");
      f != nullptr && !(f->is_string() && f->get_ref<const std::string&>().empty())) {
    std::string schema;
    if (f->is_string() && *f == "json") {
      schema = R"({"type":"object"})";
    } else if (f->is_object()) {
      // Key order matters (properties are generated in order); nlohmann::json sorts keys.
      schema = nlohmann::ordered_json::parse(body)["format"].dump();
    } else {
      ThrowBadField("format", "'format' must be \"json\" or a JSON Schema object");
    }
    try {
      constrain::CompileJsonSchema(schema);
    } catch (const Error& e) {
      ThrowBadField("format", std::string("'format': ") + e.what(),
                    std::string(e.what()).find("is not supported") != std::string::npos
                        ? "unsupported"
                        : "invalid_value");
    }
    r.options.emplace_back("json_schema", std::move(schema));
  }
  Refuse(j, "think", "thinking mode is not supported by ebb's chat templates yet");
  if (chat) {
    r.messages = Messages(j);
    Refuse(j, "tools", "tool calling is not supported yet");
  } else {
    r.prompt = String(j, "prompt", false);
    r.system = String(j, "system", false);
    r.raw = Bool(j, "raw", false);
    Refuse(j, "images", "images need a vision model, which ebb does not run");
    Refuse(j, "template",
           "a per-request template is not supported; ebb renders the model's own chat template "
           "(send raw: true with a prompt you formatted yourself)");
    Refuse(j, "suffix", "fill-in-the-middle is not supported");
    Refuse(j, "context",
           "ebb returns no context tokens (the field is deprecated in Ollama): send the "
           "conversation to /api/chat instead");
  }
  MapOptions(j, r);
  return r;
}

OllamaEmbedRequest ParseOllamaEmbed(std::string_view body, bool legacy) {
  const Json j = ParseJsonObjectBody(body);
  OllamaEmbedRequest r;
  r.model = ModelField(j);
  r.keep_alive = GetKeepAlive(j);
  if (legacy) {
    r.texts.push_back(String(j, "prompt", true));
  } else {
    const Json* in = Field(j, "input");
    if (in == nullptr) ThrowBadField("input", "'input' is required", "missing");
    if (in->is_string()) {
      r.texts.push_back(in->get<std::string>());
    } else if (in->is_array() && !in->empty()) {
      for (const auto& t : *in) {
        if (!t.is_string()) ThrowBadField("input", "'input' must be a string or a list of strings");
        r.texts.push_back(t.get<std::string>());
      }
    } else {
      ThrowBadField("input", "'input' must be a string or a non-empty list of strings");
    }
    r.truncate = Bool(j, "truncate", true);
    if (const Json* d = Field(j, "dimensions")) {
      if (!d->is_number_integer() || d->get<int64_t>() < 1 || d->get<int64_t>() > INT32_MAX) {
        ThrowBadField("dimensions", "'dimensions' must be a positive integer");
      }
      r.dimensions = static_cast<int32_t>(d->get<int64_t>());
    }
  }
  if (const Json* o = Field(j, "options")) {
    if (!o->is_object()) ThrowBadField("options", "'options' must be an object");
    for (const auto& [k, v] : o->items()) {
      if (!v.is_null() && !IsNeutral(k, v)) r.ignored.push_back(k);
    }
  }
  return r;
}

std::string ParseOllamaShow(std::string_view body) { return ModelField(ParseJsonObjectBody(body)); }

}  // namespace ebb::server
