// ebb/chat_template.h — renders a model's chat template (Hugging Face tokenizer_config.json
// "chat_template") into a prompt string, with ebb's own Jinja-subset interpreter.
//
// The interpreter reproduces what transformers' apply_chat_template renders (Jinja2 with
// trim_blocks, lstrip_blocks, the loopcontrols extension, raise_exception, strftime_now and a
// json.dumps-compatible tojson) for the constructs real chat templates use; docs/
// chat_templates.md lists what is and is not supported. Anything unsupported is an error, never
// a silently different prompt.
//
// Errors: ebb::Error. InvalidArgument for template syntax errors and unsupported constructs
// (message "<source>:<line>:<col>: ...", raised by Parse when possible), for render-time errors
// (same format) and for the template's own raise_exception(msg) (message == msg, verbatim);
// NotFound when FromModelDir finds no template; ResourceExhausted when a render passes a limit
// in ChatTemplateOptions.
//
// Thread-safety: a ChatTemplate is immutable after construction; Render may be called from
// many threads at once. Objects are not copyable (hold them by unique_ptr).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/export.h"

namespace ebb {

// One chat message. For tool calls, multi-part content or extra fields, use RenderJson.
struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatTemplateOptions {
  // Special tokens passed to the template as bos_token / eos_token. FromModelDir fills these
  // from tokenizer_config.json when they are left empty. Empty: the variable is not defined.
  std::string bos_token;
  std::string eos_token;
  // Clock for strftime_now() (formatted in local time). Null: the system clock. Inject a fixed
  // clock to make renders of date-stamped templates (Llama 3.x) reproducible.
  std::function<std::chrono::system_clock::time_point()> clock;
  // Render limits; passing one fails the render with ResourceExhausted.
  size_t max_output_bytes = size_t{16} << 20;  // the prompt and any string built on the way
  uint64_t max_steps = 20'000'000;             // statements + loop iterations + calls
  int max_call_depth = 16;                     // macro recursion
  size_t max_items = 1'000'000;                // elements of one list built by the template
};

class EBB_API ChatTemplate {
 public:
  // Parses `source` (Jinja text). `source_name` prefixes error positions.
  static std::unique_ptr<ChatTemplate> Parse(std::string_view source,
                                             std::string_view source_name = "chat_template",
                                             ChatTemplateOptions options = {});

  // Loads the template of a model folder, from the first that exists of:
  //   1. `override_file` when not empty (a .jinja file; NotFound if missing; its path as given
  //      prefixes error positions);
  //   2. <dir>/chat_template.jinja (how recent transformers versions save it);
  //   3. "chat_template" in <dir>/tokenizer_config.json: a string, or a list of
  //      {"name", "template"} objects of which "default" is used (else the first);
  //   4. <dir>/chat_template.json {"chat_template": "..."}.
  // Special tokens bos/eos/unk/pad (string or {"content": ...}) come from tokenizer_config.json
  // unless set in `options`.
  static std::unique_ptr<ChatTemplate> FromModelDir(const std::filesystem::path& dir,
                                                    const std::filesystem::path& override_file = {},
                                                    ChatTemplateOptions options = {});

  // Parses `source` (Jinja text) with the special tokens bos/eos/unk/pad of
  // <dir>/tokenizer_config.json (unless set in `options`), as FromModelDir does for the folder's
  // own template: how a template given at load (the chat_template option) renders like one the
  // folder ships. `source_name` prefixes error positions (the file's path, or "chat_template").
  static std::unique_ptr<ChatTemplate> ParseForModelDir(std::string_view source,
                                                        std::string_view source_name,
                                                        const std::filesystem::path& dir,
                                                        ChatTemplateOptions options = {});

  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // Renders simple role/content messages.
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  // Renders messages given as a JSON array text (OpenAI/transformers message objects, with
  // tool_calls, tool_call_id, list content, ... passed through as they are).
  // `extra_context_json`, when not empty, is a JSON object whose members become template
  // variables (e.g. {"tools": [...], "date_string": "26 Jul 2024"}); they override the defaults.
  // Variables always defined: messages, add_generation_prompt, tools (none), documents (none),
  // plus bos_token/eos_token/unk_token/pad_token when known. Key order of JSON objects is kept
  // (it shows in tojson output).
  std::string RenderJson(std::string_view messages_json, bool add_generation_prompt,
                         std::string_view extra_context_json = {}) const;

  // The template text.
  const std::string& source() const;
  const std::string& bos_token() const;
  const std::string& eos_token() const;

 private:
  struct Impl;
  explicit ChatTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebb
