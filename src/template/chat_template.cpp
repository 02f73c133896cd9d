// Public ChatTemplate API on top of the lexer, parser and interpreter in src/template/.
#include "ebb/chat_template.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "core/files.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "template/interpreter.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace ebb {

using ordered_json = nlohmann::ordered_json;

struct ChatTemplate::Impl {
  std::string source;
  tmpl::RenderEnv env;
  tmpl::Body body;
  std::vector<std::pair<std::string, std::string>> special_tokens;  // name -> text
  std::string bos_token;
  std::string eos_token;
};

namespace {

std::string ReadFile(const std::filesystem::path& path) {
  return internal::ReadRegularFile(path, internal::kMaxConfigFileBytes, "chat template file");
}

ordered_json ParseJson(std::string_view text, std::string_view what) {
  return internal::ParseJsonDocument<ordered_json>(text, what);
}

// A special token in tokenizer_config.json: a string or an AddedToken {"content": "..."}.
std::string TokenText(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return std::string();
}

tmpl::Value ToValue(const ordered_json& json, std::string_view what) {
  try {
    return tmpl::FromJson(json);
  } catch (const tmpl::ValueError& e) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + ": " + e.what());
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::~ChatTemplate() = default;

std::unique_ptr<ChatTemplate> ChatTemplate::Parse(std::string_view source,
                                                  std::string_view source_name,
                                                  ChatTemplateOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(source);
  impl->env.source_name = std::string(source_name);
  impl->env.clock = std::move(options.clock);
  impl->env.limits.max_output_bytes = options.max_output_bytes;
  impl->env.limits.max_steps = options.max_steps;
  impl->env.limits.max_call_depth = options.max_call_depth;
  impl->env.limits.max_items = options.max_items;
  impl->body =
      tmpl::Parse(tmpl::Tokenize(impl->source, impl->env.source_name), impl->env.source_name);
  impl->bos_token = std::move(options.bos_token);
  impl->eos_token = std::move(options.eos_token);
  if (!impl->bos_token.empty()) impl->special_tokens.emplace_back("bos_token", impl->bos_token);
  if (!impl->eos_token.empty()) impl->special_tokens.emplace_back("eos_token", impl->eos_token);
  return std::unique_ptr<ChatTemplate>(new ChatTemplate(std::move(impl)));
}

namespace {

// <dir>/tokenizer_config.json, or null when the folder has none.
ordered_json ReadTokenizerConfig(const std::filesystem::path& dir) {
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  if (!internal::FileExists(config_path, "tokenizer_config.json")) return ordered_json();
  return ParseJson(ReadFile(config_path), config_path.string());
}

}  // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::FromModelDir(const std::filesystem::path& dir,
                                                         const std::filesystem::path& override_file,
                                                         ChatTemplateOptions options) {
  namespace fs = std::filesystem;
  const fs::path config_path = dir / "tokenizer_config.json";
  const ordered_json config = ReadTokenizerConfig(dir);
  std::string source;
  std::string source_name;
  if (!override_file.empty()) {
    if (!internal::FileExists(override_file, "template file")) {
      throw Error(ErrorCode::NotFound,
                  "chat template file not found: " +
                      internal::EscapeForMessage(override_file.string(), 1024));
    }
    source = ReadFile(override_file);
    // The path as given: the renderer's errors then name the very file ("t.jinja:3:7: ...").
    source_name = override_file.string();
  } else if (internal::FileExists(dir / "chat_template.jinja", "chat_template.jinja")) {
    source = ReadFile(dir / "chat_template.jinja");
    source_name = "chat_template.jinja";
  } else if (config.is_object() && config.contains("chat_template") &&
             !config["chat_template"].is_null()) {
    const ordered_json& t = config["chat_template"];
    source_name = "tokenizer_config.json:chat_template";
    if (t.is_string()) {
      source = t.get<std::string>();
    } else if (t.is_array() && !t.empty()) {
      const ordered_json* chosen = nullptr;
      for (const auto& entry : t) {
        if (entry.is_object() && entry.value("name", "") == "default") chosen = &entry;
      }
      if (chosen == nullptr) chosen = &t[0];
      if (!chosen->is_object() || !chosen->contains("template") ||
          !(*chosen)["template"].is_string()) {
        throw Error(
            ErrorCode::InvalidArgument,
            config_path.string() + ": chat_template list entries need a \"template\" string");
      }
      source = (*chosen)["template"].get<std::string>();
      source_name += "[" + chosen->value("name", std::string("0")) + "]";
    } else {
      throw Error(ErrorCode::InvalidArgument,
                  config_path.string() + ": chat_template must be a string or a list");
    }
  } else if (internal::FileExists(dir / "chat_template.json", "chat_template.json")) {
    ordered_json j = ParseJson(ReadFile(dir / "chat_template.json"), "chat_template.json");
    if (!j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string()) {
      throw Error(ErrorCode::InvalidArgument, "chat_template.json has no chat_template string");
    }
    source = j["chat_template"].get<std::string>();
    source_name = "chat_template.json";
  } else {
    throw Error(ErrorCode::NotFound,
                "no chat template in " + dir.string() +
                    " (looked for chat_template.jinja, tokenizer_config.json \"chat_template\" and "
                    "chat_template.json); pass a template file instead");
  }
  // ParseForModelDir reads tokenizer_config.json again for the special tokens (a small file).
  return ParseForModelDir(source, source_name, dir, std::move(options));
}

std::unique_ptr<ChatTemplate> ChatTemplate::ParseForModelDir(std::string_view source,
                                                             std::string_view source_name,
                                                             const std::filesystem::path& dir,
                                                             ChatTemplateOptions options) {
  const ordered_json config = ReadTokenizerConfig(dir);
  std::vector<std::pair<std::string, std::string>> extra_tokens;
  if (config.is_object()) {
    if (options.bos_token.empty() && config.contains("bos_token")) {
      options.bos_token = TokenText(config["bos_token"]);
    }
    if (options.eos_token.empty() && config.contains("eos_token")) {
      options.eos_token = TokenText(config["eos_token"]);
    }
    for (const char* name : {"unk_token", "pad_token"}) {
      if (config.contains(name)) {
        std::string text = TokenText(config[name]);
        if (!text.empty()) extra_tokens.emplace_back(name, std::move(text));
      }
    }
  }
  auto result = Parse(source, source_name, std::move(options));
  for (auto& t : extra_tokens) result->impl_->special_tokens.push_back(std::move(t));
  return result;
}

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  ordered_json array = ordered_json::array();
  for (const ChatMessage& m : messages) {
    ordered_json msg = ordered_json::object();
    msg["role"] = m.role;
    msg["content"] = m.content;
    array.push_back(std::move(msg));
  }
  return RenderJson(array.dump(), add_generation_prompt);
}

std::string ChatTemplate::RenderJson(std::string_view messages_json, bool add_generation_prompt,
                                     std::string_view extra_context_json) const {
  ordered_json messages = ParseJson(messages_json, "messages");
  if (!messages.is_array())
    throw Error(ErrorCode::InvalidArgument, "messages must be a JSON array");
  tmpl::ObjectData context;
  context.Set("messages", ToValue(messages, "messages"));
  context.Set("tools", tmpl::Value::None());
  context.Set("documents", tmpl::Value::None());
  context.Set("add_generation_prompt", tmpl::Value::Bool(add_generation_prompt));
  for (const auto& [name, text] : impl_->special_tokens) {
    context.Set(name, tmpl::Value::String(text));
  }
  if (!extra_context_json.empty()) {
    ordered_json extra = ParseJson(extra_context_json, "extra context");
    if (!extra.is_object()) {
      throw Error(ErrorCode::InvalidArgument, "extra context must be a JSON object");
    }
    for (const auto& [key, value] : extra.items()) {
      context.Set(key, ToValue(value, "extra context"));
    }
  }
  tmpl::Interpreter interpreter(impl_->env);
  return interpreter.Render(impl_->body, context);
}

const std::string& ChatTemplate::source() const { return impl_->source; }
const std::string& ChatTemplate::bos_token() const { return impl_->bos_token; }
const std::string& ChatTemplate::eos_token() const { return impl_->eos_token; }

}  // namespace ebb
