#include "server/openai_request.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "constrain/json_schema.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "server/admin_only.h"
#include "server/api_error.h"

namespace ebb::server {
namespace {

using Json = nlohmann::json;

const Json* Field(const Json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string RequireString(const Json& j, const char* name) {
  const Json* v = Field(j, name);
  if (v == nullptr) ThrowBadField(name, std::string("'") + name + "' is required", "missing");
  if (!v->is_string() || v->get_ref<const std::string&>().empty()) {
    ThrowBadField(name, std::string("'") + name + "' must be a non-empty string");
  }
  return v->get<std::string>();
}

bool GetBool(const Json& j, const char* name, bool fallback) {
  const Json* v = Field(j, name);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) ThrowBadField(name, std::string("'") + name + "' must be true or false");
  return v->get<bool>();
}

std::optional<double> GetNumber(const Json& j, const char* name, double lo, double hi) {
  const Json* v = Field(j, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) ThrowBadField(name, std::string("'") + name + "' must be a number");
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi)) {
    ThrowBadField(name, std::string("'") + name + "' must be between " + nlohmann::json(lo).dump() +
                            " and " + nlohmann::json(hi).dump());
  }
  return d;
}

std::optional<int64_t> GetInt(const Json& j, const char* name, int64_t lo, int64_t hi) {
  const Json* v = Field(j, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    ThrowBadField(name, std::string("'") + name + "' must be an integer");
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    ThrowBadField(name, std::string("'") + name + "' must be at most " + std::to_string(hi));
  }
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) {
    ThrowBadField(name, std::string("'") + name + "' must be between " + std::to_string(lo) +
                            " and " + std::to_string(hi));
  }
  return i;
}

std::optional<KeepAlive> GetKeepAlive(const Json& j) {
  const Json* v = Field(j, "keep_alive");
  if (v == nullptr) return std::nullopt;
  try {
    if (v->is_number_integer()) return ParseKeepAlive(std::to_string(v->get<int64_t>()));
    if (v->is_string()) return ParseKeepAlive(v->get<std::string>());
  } catch (const Error& e) {
    ThrowBadField("keep_alive", e.what());
  }
  ThrowBadField("keep_alive", "'keep_alive' must be a duration string (\"5m\") or seconds");
}

std::vector<std::pair<std::string, std::string>> GetOptions(const Json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json* v = Field(j, "options");
  if (v == nullptr) return out;
  if (!v->is_object()) {
    ThrowBadField("options",
                  "'options' must be an object of ebb option keys, e.g. "
                  "{\"top_k\": 40}");
  }
  for (const auto& [k, val] : v->items()) {
    const std::string param = "options." + k;
    if (val.is_string()) {
      out.emplace_back(k, val.get<std::string>());
    } else if (val.is_boolean()) {
      out.emplace_back(k, val.get<bool>() ? "true" : "false");
    } else if (val.is_number_integer() || val.is_number_unsigned()) {
      out.emplace_back(k, val.dump());
    } else if (val.is_number()) {
      out.emplace_back(k, nlohmann::json(val.get<double>()).dump());
    } else {
      ThrowBadField(param, "'" + param + "' must be a string, a number or a boolean");
    }
  }
  RefuseAdminOnlyOptions(out);
  return out;
}

// OpenAI's logit_bias: an object whose keys are token ids (as strings) and whose values are
// biases from -100 to 100.
std::map<int32_t, float> GetLogitBias(const Json& v) {
  if (!v.is_object()) {
    ThrowBadField("logit_bias",
                  "'logit_bias' must be an object of token id -> bias, e.g. {\"50256\": -100}");
  }
  std::map<int32_t, float> out;
  for (const auto& [k, b] : v.items()) {
    int64_t id = -1;
    const auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), id);
    if (k.empty() || ec != std::errc() || p != k.data() + k.size() || id < 0 || id > INT32_MAX) {
      ThrowBadField("logit_bias", "'logit_bias' key '" + internal::EscapeForMessage(k) +
                                      "' is not a token id (a non-negative integer)");
    }
    if (!b.is_number()) {
      ThrowBadField("logit_bias",
                    "'logit_bias' value of token " + k + " must be a number from -100 to 100");
    }
    const double d = b.get<double>();
    if (!(d >= -100 && d <= 100)) {
      ThrowBadField("logit_bias", "'logit_bias' value of token " + k + " is " +
                                      nlohmann::json(d).dump() + ": it must be from -100 to 100");
    }
    out[static_cast<int32_t>(id)] = static_cast<float>(d);
  }
  return out;
}

// Text of a message's content: a string, or OpenAI's list of parts of which only "text" parts
// are supported.
std::string ContentText(const Json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
      const Json& part = content[i];
      const std::string p = param + "[" + std::to_string(i) + "]";
      if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
          !part.contains("text") || !part["text"].is_string()) {
        ThrowBadField(p, "'" + p +
                             "' is not supported: only {\"type\": \"text\", \"text\": ...} "
                             "parts (this is a text model)");
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  ThrowBadField(param, "'" + param + "' must be a string or a list of text parts");
}

// OpenAI's messages: a non-empty list of {role, content}; "developer" is read as "system".
std::vector<ChatMessage> Messages(const Json& m) {
  if (!m.is_array() || m.empty()) {
    ThrowBadField("messages", "'messages' must be a non-empty list of {role, content}");
  }
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < m.size(); ++i) {
    const Json& msg = m[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) ThrowBadField(p, "'" + p + "' must be an object {role, content}");
    const Json* role = Field(msg, "role");
    if (role == nullptr || !role->is_string() || role->get_ref<const std::string&>().empty()) {
      ThrowBadField(p + ".role", "'" + p + ".role' must be a non-empty string");
    }
    const Json* content = Field(msg, "content");
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";  // OpenAI's newer name for system
    // An assistant message that only calls tools has content null.
    if (content != nullptr && !content->is_null())
      cm.content = ContentText(*content, p + ".content");
    out.push_back(std::move(cm));
  }
  return out;
}

void RefuseUnsupported(const Json& j) {
  if (const Json* n = Field(j, "n")) {
    if (!n->is_number_integer() || n->get<int64_t>() != 1) {
      ThrowBadField("n",
                    "'n' must be 1: ebb generates one choice per request (send several "
                    "requests for several choices)",
                    "unsupported_value");
    }
  }
  for (const char* name : {"functions", "function_call"}) {
    const Json* v = Field(j, name);
    if (v != nullptr && !(v->is_array() && v->empty()) && !(v->is_string() && *v == "none")) {
      ThrowBadField(name,
                    std::string("'") + name +
                        "' is OpenAI's deprecated form: send \"tools\" and \"tool_choice\" "
                        "instead",
                    "unsupported_parameter");
    }
  }
  if (auto b = GetInt(j, "best_of", 1, 1 << 30); b && *b != 1) {
    ThrowBadField("best_of",
                  "'best_of' must be 1: ebb generates one candidate per request (send several "
                  "requests, or sample with a seed, for several candidates)",
                  "unsupported_value");
  }
}

// OpenAI's response_format: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"}}. Returns the schema text ("" for text). The schema
// is compiled here, so an unsupported keyword is a 400 before any model work.
// `ordered`: the same body parsed keeping key order, for the schema's text: a schema's
// `properties` order is the order its JSON is generated in.
std::string ResponseFormatSchema(const Json& j, const nlohmann::ordered_json& ordered) {
  const Json* rf = Field(j, "response_format");
  if (rf == nullptr || rf->is_null()) return "";
  if (!rf->is_object()) {
    ThrowBadField("response_format",
                  "'response_format' must be an object: {\"type\": \"text\"}, {\"type\": "
                  "\"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {\"name\": "
                  "..., \"schema\": {...}}}");
  }
  // Checked before it is read as a string: {"type": 5} is a 400 naming the field, not the
  // JSON library's "type must be string, but is number".
  const Json* type = Field(*rf, "type");
  if (type == nullptr || !type->is_string()) {
    ThrowBadField("response_format.type",
                  "'response_format.type' must be a string: \"text\", \"json_object\" or "
                  "\"json_schema\"");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return "";
  std::string schema;
  std::string param = "response_format";
  if (t == "json_object") {
    schema = R"({"type":"object"})";
  } else if (t == "json_schema") {
    const Json* js = Field(*rf, "json_schema");
    if (js == nullptr || !js->is_object()) {
      ThrowBadField("response_format.json_schema",
                    "'response_format.json_schema' must be an object {\"name\": ..., "
                    "\"schema\": {...}, \"strict\": true}",
                    "missing");
    }
    if (const Json* strict = Field(*js, "strict"); strict != nullptr && !strict->is_boolean()) {
      ThrowBadField("response_format.json_schema.strict",
                    "'response_format.json_schema.strict' must be a boolean");
    }
    const Json* sch = Field(*js, "schema");
    if (sch == nullptr || !(sch->is_object() || sch->is_boolean())) {
      ThrowBadField("response_format.json_schema.schema",
                    "'response_format.json_schema.schema' must be a JSON Schema object", "missing");
    }
    schema = ordered["response_format"]["json_schema"]["schema"].dump();
    param = "response_format.json_schema.schema";
  } else {
    ThrowBadField("response_format.type",
                  "'response_format.type' is \"" + internal::EscapeForMessage(t, 40) +
                      "\"; the allowed values are \"text\", \"json_object\" and \"json_schema\"",
                  "unsupported_value");
  }
  try {
    constrain::CompileJsonSchema(schema);
  } catch (const Error& e) {
    ThrowBadField(param, std::string("'") + param + "': " + e.what(),
                  std::string(e.what()).find("is not supported") != std::string::npos
                      ? "unsupported_value"
                      : "invalid_value");
  }
  return schema;
}

// OpenAI's tools, tool_choice and parallel_tool_calls. Each function's parameters schema is
// compiled here, so a keyword ebb cannot honour is a 400 naming it.
void ParseTools(const Json& j, const nlohmann::ordered_json& ordered, CompletionRequest& r) {
  const Json* tools = Field(j, "tools");
  std::vector<std::string> names;
  if (tools != nullptr && !tools->is_null()) {
    if (!tools->is_array()) {
      ThrowBadField("tools",
                    "'tools' must be a list of {\"type\": \"function\", \"function\": "
                    "{\"name\", \"description\", \"parameters\"}}");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      const std::string p = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || Field(t, "type") == nullptr || t["type"] != "function") {
        ThrowBadField(p + ".type", "'" + p + ".type' must be \"function\" (the only tool type)");
      }
      const Json* f = Field(t, "function");
      if (f == nullptr || !f->is_object()) {
        ThrowBadField(p + ".function", "'" + p + ".function' must be an object {\"name\", ...}");
      }
      const Json* name = Field(*f, "name");
      if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty() ||
          name->get_ref<const std::string&>().size() > 64 ||
          name->get_ref<const std::string&>().find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
              std::string::npos) {
        ThrowBadField(p + ".function.name", "'" + p +
                                                ".function.name' must be 1 to 64 letters, digits, "
                                                "'_' or '-'");
      }
      for (const std::string& n : names) {
        if (n == *name) {
          ThrowBadField(p + ".function.name",
                        "'" + p + ".function.name' \"" + n + "\" names two tools");
        }
      }
      names.push_back(name->get<std::string>());
      if (const Json* d = Field(*f, "description"); d != nullptr && !d->is_string()) {
        ThrowBadField(p + ".function.description",
                      "'" + p + ".function.description' must be a string");
      }
      if (const Json* params = Field(*f, "parameters"); params != nullptr) {
        const std::string pp = p + ".function.parameters";
        if (!params->is_object()) ThrowBadField(pp, "'" + pp + "' must be a JSON Schema object");
        try {
          constrain::CompileJsonSchema(ordered["tools"][i]["function"]["parameters"].dump());
        } catch (const Error& e) {
          ThrowBadField(pp, "'" + pp + "': " + e.what(),
                        std::string(e.what()).find("is not supported") != std::string::npos
                            ? "unsupported_value"
                            : "invalid_value");
        }
      }
    }
    if (!tools->empty()) r.tools_json = ordered["tools"].dump();  // key order kept
  }
  if (const Json* tc = Field(j, "tool_choice"); tc != nullptr && !tc->is_null()) {
    if (tc->is_string()) {
      const std::string& c = tc->get_ref<const std::string&>();
      if (c != "none" && c != "auto" && c != "required") {
        ThrowBadField("tool_choice",
                      "'tool_choice' is \"" + internal::EscapeForMessage(c, 40) +
                          "\"; use \"none\", \"auto\", \"required\" or "
                          "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                      "unsupported_value");
      }
      r.tool_choice = c;
    } else if (tc->is_object() && Field(*tc, "type") != nullptr && (*tc)["type"] == "function" &&
               Field(*tc, "function") != nullptr && (*tc)["function"].is_object() &&
               Field((*tc)["function"], "name") != nullptr &&
               (*tc)["function"]["name"].is_string()) {
      r.tool_choice = "function";
      r.tool_choice_name = (*tc)["function"]["name"].get<std::string>();
      if (std::find(names.begin(), names.end(), r.tool_choice_name) == names.end()) {
        ThrowBadField("tool_choice.function.name",
                      "'tool_choice.function.name' \"" +
                          internal::EscapeForMessage(r.tool_choice_name, 64) +
                          "\" is not one of the request's tools");
      }
    } else {
      ThrowBadField("tool_choice",
                    "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                    "\"function\", \"function\": {\"name\": ...}}");
    }
    if (r.tools_json.empty() && r.tool_choice != "none") {
      ThrowBadField("tool_choice", "'tool_choice' \"" + r.tool_choice +
                                       "\" needs \"tools\": the request has none");
    }
  }
  if (const Json* ptc = Field(j, "parallel_tool_calls"); ptc != nullptr && !ptc->is_null()) {
    if (!ptc->is_boolean()) {
      ThrowBadField("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    }
    r.parallel_tool_calls = ptc->get<bool>();
  }
}

}  // namespace

Json ParseJsonObjectBody(std::string_view body) {
  if (body.empty()) {
    throw ApiException({400, "invalid_request_error",
                        "the request body is empty; send a JSON object (Content-Type: "
                        "application/json)",
                        std::nullopt, "invalid_json", 0});
  }
  Json j;
  try {
    j = internal::ParseJsonDocument(body, "the request body");
  } catch (const Error& e) {
    throw ApiException({400, "invalid_request_error", e.what(), std::nullopt, "invalid_json", 0});
  }
  if (!j.is_object()) {
    throw ApiException({400, "invalid_request_error",
                        "the request body must be a JSON object, not " + std::string(j.type_name()),
                        std::nullopt, "invalid_json", 0});
  }
  return j;
}

CompletionRequest ParseCompletionRequest(std::string_view body, bool chat) {
  const Json j = ParseJsonObjectBody(body);
  CompletionRequest r;
  r.chat = chat;
  r.model = RequireString(j, "model");
  RefuseUnsupported(j);
  // Key order matters to schemas (properties are generated in order); nlohmann::json sorts keys.
  const auto ordered = nlohmann::ordered_json::parse(body);
  r.json_schema = ResponseFormatSchema(j, ordered);
  if (chat) {
    const Json* m = Field(j, "messages");
    if (m == nullptr) ThrowBadField("messages", "'messages' is required", "missing");
    r.messages = Messages(*m);
    r.messages_json = m->dump();
    for (const Json& msg : *m) {
      if (msg.contains("tool_calls") || (msg.contains("role") && msg["role"] == "tool")) {
        r.tool_history = true;
      }
    }
    ParseTools(j, ordered, r);
  } else {
    for (const char* name : {"tools", "tool_choice", "parallel_tool_calls"}) {
      if (const Json* v = Field(j, name); v != nullptr && !v->is_null()) {
        ThrowBadField(
            name, std::string("'") + name + "' is a chat field: send tools to /v1/chat/completions",
            "unsupported_parameter");
      }
    }
    const Json* p = Field(j, "prompt");
    if (p == nullptr) ThrowBadField("prompt", "'prompt' is required", "missing");
    if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else {
      ThrowBadField("prompt", "'prompt' must be a string (or a list of one string)");
    }
    if (r.prompt.empty()) ThrowBadField("prompt", "'prompt' must not be empty");
    if (GetBool(j, "echo", false)) {
      ThrowBadField("echo", "'echo' is not supported by ebb yet", "unsupported_parameter");
    }
    if (Field(j, "suffix") != nullptr) {
      ThrowBadField("suffix", "'suffix' is not supported by ebb yet", "unsupported_parameter");
    }
  }
  r.stream = GetBool(j, "stream", false);
  if (const Json* so = Field(j, "stream_options")) {
    if (!so->is_object()) ThrowBadField("stream_options", "'stream_options' must be an object");
    r.include_usage = GetBool(*so, "include_usage", false);
  }
  // max_completion_tokens is the newer name; it wins when both are given.
  auto mt = GetInt(j, "max_completion_tokens", 1, 1 << 30);
  if (!mt) mt = GetInt(j, "max_tokens", 1, 1 << 30);
  if (mt) r.max_tokens = static_cast<int32_t>(*mt);
  if (const Json* stop = Field(j, "stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const Json& s : *stop) {
        if (!s.is_string()) ThrowBadField("stop", "'stop' must be a string or a list of strings");
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      ThrowBadField("stop", "'stop' must be a string or a list of strings");
    }
    if (r.stop.size() > 4) ThrowBadField("stop", "'stop' takes at most 4 sequences");
    for (const auto& s : r.stop) {
      if (s.empty()) ThrowBadField("stop", "'stop' sequences must not be empty");
    }
  }
  if (auto t = GetNumber(j, "temperature", 0, 2)) r.temperature = static_cast<float>(*t);
  if (auto t = GetNumber(j, "top_p", 0, 1)) r.top_p = static_cast<float>(*t);
  if (auto s = GetInt(j, "seed", 0, INT64_MAX)) r.seed = static_cast<uint64_t>(*s);
  if (auto v = GetNumber(j, "presence_penalty", -2, 2)) r.presence_penalty = static_cast<float>(*v);
  if (auto v = GetNumber(j, "frequency_penalty", -2, 2)) {
    r.frequency_penalty = static_cast<float>(*v);
  }
  if (const Json* lb = Field(j, "logit_bias")) r.logit_bias = GetLogitBias(*lb);
  if (chat) {
    r.logprobs = GetBool(j, "logprobs", false);
    if (auto n = GetInt(j, "top_logprobs", 0, 20)) {
      if (*n > 0 && !r.logprobs) {
        ThrowBadField("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
      }
      r.top_logprobs = static_cast<int32_t>(*n);
    }
  } else {
    // /v1/completions: logprobs is the number of most likely tokens to return with each one.
    if (auto n = GetInt(j, "logprobs", 0, 20)) {
      r.logprobs = true;
      r.top_logprobs = static_cast<int32_t>(*n);
    }
    if (Field(j, "top_logprobs") != nullptr) {
      ThrowBadField("top_logprobs",
                    "'top_logprobs' is a chat field; /v1/completions takes \"logprobs\": N (the "
                    "number of most likely tokens, 0 to 20)",
                    "unsupported_parameter");
    }
  }
  if (const Json* cp = Field(j, "cache_prompt")) {
    if (!cp->is_boolean()) {
      ThrowBadField("cache_prompt",
                    "'cache_prompt' must be true or false (false: prefill every prompt token "
                    "and store nothing in the model's prefix cache), not " +
                        std::string(cp->type_name()));
    }
    r.cache_prompt = cp->get<bool>();
  }
  r.keep_alive = GetKeepAlive(j);
  r.options = GetOptions(j);
  return r;
}

EmbeddingsRequest ParseEmbeddingsRequest(std::string_view body) {
  const Json j = ParseJsonObjectBody(body);
  EmbeddingsRequest r;
  r.model = RequireString(j, "model");
  const Json* in = Field(j, "input");
  if (in == nullptr) ThrowBadField("input", "'input' is required", "missing");
  if (in->is_string()) {
    r.texts.push_back(in->get<std::string>());
  } else if (in->is_array() && !in->empty()) {
    const Json& first = (*in)[0];
    if (first.is_string()) {
      for (size_t i = 0; i < in->size(); ++i) {
        if (!(*in)[i].is_string()) {
          ThrowBadField("input",
                        "'input' must be a string, a list of strings, a list of token "
                        "ids or a list of token-id lists; item " +
                            std::to_string(i) + " is not a string");
        }
        r.texts.push_back((*in)[i].get<std::string>());
      }
    } else if (first.is_number_integer()) {
      std::vector<int32_t> row;
      for (const Json& t : *in) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
          ThrowBadField("input", "'input' token ids must be non-negative integers");
        }
        row.push_back(static_cast<int32_t>(t.get<int64_t>()));
      }
      r.token_ids.push_back(std::move(row));
    } else if (first.is_array()) {
      for (const Json& rowj : *in) {
        std::vector<int32_t> row;
        if (!rowj.is_array()) ThrowBadField("input", "'input' must be a list of token-id lists");
        for (const Json& t : rowj) {
          if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
            ThrowBadField("input", "'input' token ids must be non-negative integers");
          }
          row.push_back(static_cast<int32_t>(t.get<int64_t>()));
        }
        r.token_ids.push_back(std::move(row));
      }
    } else {
      ThrowBadField("input", "'input' must be a string or a list of strings or token ids");
    }
  } else {
    ThrowBadField("input", "'input' must be a non-empty string or list");
  }
  if (r.texts.size() + r.token_ids.size() > 2048) {
    ThrowBadField("input", "'input' takes at most 2048 items per request");
  }
  if (const Json* ef = Field(j, "encoding_format")) {
    if (*ef == "base64") {
      r.base64 = true;
    } else if (*ef != "float") {
      ThrowBadField("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    }
  }
  if (auto d = GetInt(j, "dimensions", 1, 1 << 20)) r.dimensions = static_cast<int32_t>(*d);
  r.keep_alive = GetKeepAlive(j);
  r.options = GetOptions(j);
  return r;
}

PrefixRequest ParsePrefixRequest(std::string_view body) {
  if (body.empty()) {
    throw ApiException({400, "invalid_request_error",
                        "the request body is empty; name the prefix with one of "
                        "{\"prompt\": TEXT}, {\"messages\": [...]} or {\"input_ids\": [...]} "
                        "(to drop the whole unpinned prefix cache: POST "
                        "/v1/models/{id}/prefix/drop)",
                        "prompt", "missing", 0});
  }
  const Json j = ParseJsonObjectBody(body);
  PrefixRequest r;
  std::vector<std::string> given;
  for (const char* name : {"prompt", "messages", "input_ids"}) {
    if (Field(j, name) != nullptr) given.emplace_back(name);
  }
  if (given.size() != 1) {
    ThrowBadField(given.empty() ? "prompt" : given[1],
                  (given.empty() ? std::string("no prefix given")
                                 : "both '" + given[0] + "' and '" + given[1] + "' given") +
                      ": send exactly one of \"prompt\" (text, encoded as a /v1/completions "
                      "prompt), \"messages\" (rendered with the model's chat template, without "
                      "the generation prompt) or \"input_ids\" (token ids)",
                  given.empty() ? "missing" : "invalid_value");
  }
  if (const Json* p = Field(j, "prompt")) {
    if (!p->is_string() || p->get_ref<const std::string&>().empty()) {
      ThrowBadField("prompt", "'prompt' must be a non-empty string");
    }
    r.prompt = p->get<std::string>();
  } else if (const Json* m = Field(j, "messages")) {
    r.messages = Messages(*m);
  } else {
    const Json& ids = *Field(j, "input_ids");
    if (!ids.is_array() || ids.empty()) {
      ThrowBadField("input_ids", "'input_ids' must be a non-empty list of token ids");
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const Json& t = ids[i];
      const bool id = t.is_number_unsigned() ? t.get<uint64_t>() <= INT32_MAX
                      : t.is_number_integer()
                          ? t.get<int64_t>() >= 0 && t.get<int64_t>() <= INT32_MAX
                          : false;
      if (!id) {
        ThrowBadField("input_ids", "'input_ids[" + std::to_string(i) +
                                       "]' is not a token id (a non-negative integer)");
      }
      r.input_ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  return r;
}

}  // namespace ebb::server
