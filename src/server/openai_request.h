// OpenAI request bodies parsed into ebb's requests: /v1/chat/completions, /v1/completions and
// /v1/embeddings, and the body of ebb's prefix pin route (its messages are OpenAI's). Pure
// functions of the JSON (no model needed), so the fuzzer drives them.
//
// Every field OpenAI defines is either honoured or refused with a 400 naming it (ApiException
// with `param`): a request is never half understood. Unknown fields are ignored, as OpenAI's
// own SDKs send fields newer than a server knows.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/generation.h"
#include "ebb/model_manager.h"

namespace ebb::server {

struct CompletionRequest {
  std::string model;
  bool chat = true;                   // /v1/chat/completions (messages) or /v1/completions
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  std::optional<int32_t> max_tokens;  // max_completion_tokens, else max_tokens
  std::vector<std::string> stop;      // string or list (at most 4, like OpenAI)
  std::optional<float> temperature;   // 0 to 2
  std::optional<float> top_p;         // 0 to 1
  std::optional<uint64_t> seed;
  std::optional<float> presence_penalty;   // -2 to 2
  std::optional<float> frequency_penalty;  // -2 to 2
  // Token id -> bias (-100 to 100); ids are checked against the model's vocabulary later.
  std::optional<std::map<int32_t, float>> logit_bias;
  // chat: logprobs (bool) and top_logprobs (0 to 20, needs logprobs); completions: logprobs N
  // (0 to 20) sets both.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::optional<KeepAlive> keep_alive;  // ebb/Ollama extension
  // llama.cpp's field: false prefills every prompt token and stores nothing in the model's
  // prefix cache (the request option cache_prompt; it wins over options.cache_prompt).
  std::optional<bool> cache_prompt;
  // response_format: "" for text; else the JSON Schema the output must satisfy (json_object:
  // {"type":"object"}), compiled once at parse time so an unsupported keyword is a 400 naming
  // it (param response_format.json_schema.schema).
  std::string json_schema;
  // Tool calling (chat; docs/structured_output.md "Tool calls"). messages_json: the messages as
  // sent (with assistant tool_calls and role "tool" results), rendered through the template's
  // tool support when tools are given or the history has tool messages. tools_json: the `tools`
  // array ("" when none); each function's parameters schema was compiled at parse time.
  std::string messages_json;
  bool tool_history = false;  // a message has tool_calls or role "tool"
  std::string tools_json;
  // tool_choice: "auto" (default with tools), "none", "required", or "function" with
  // tool_choice_name (OpenAI's {"type": "function", "function": {"name": ...}}).
  std::string tool_choice = "auto";
  std::string tool_choice_name;
  bool parallel_tool_calls = true;
  // ebb's request keys given under "options" (the option table's request scope), e.g.
  // {"options": {"top_k": 40}}: the same names as the CLI and the SDKs.
  std::vector<std::pair<std::string, std::string>> options;
};

struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> texts;               // input: string or list of strings
  std::vector<std::vector<int32_t>> token_ids;  // input: list of ints, or list of lists
  bool base64 = false;                          // encoding_format
  std::optional<int32_t> dimensions;
  std::optional<KeepAlive> keep_alive;
  std::vector<std::pair<std::string, std::string>> options;  // embed.* keys
};

// The body of POST and DELETE /v1/models/{id}/prefix (ebb's own route): the prefix as exactly
// one of these (docs/http_api.md "Prefix cache").
struct PrefixRequest {
  std::string prompt;                 // text, encoded as a /v1/completions prompt
  std::vector<ChatMessage> messages;  // rendered with the chat template, no generation prompt
  std::vector<int32_t> input_ids;     // token ids as given
};

// A request body as a JSON object: ApiException 400 (code invalid_json) for an empty body,
// invalid JSON or another JSON type. Shared by the OpenAI and Ollama parsers.
nlohmann::json ParseJsonObjectBody(std::string_view body);

// Parses the raw body. Throws ApiException (400) for invalid JSON, a field of the wrong type,
// an unsupported value (n != 1, best_of != 1, tools, ...) or a missing model/messages/prompt/input;
// 403 (admin_only_option) for a per-request option only the service's admin may set.
CompletionRequest ParseCompletionRequest(std::string_view body, bool chat);
EmbeddingsRequest ParseEmbeddingsRequest(std::string_view body);
// Throws ApiException (400 naming the field) for an empty body, invalid JSON, none or more than
// one of prompt/messages/input_ids, an empty prompt, bad messages, or ids that are not int32 >= 0
// (the ids are checked against the model's vocabulary later).
PrefixRequest ParsePrefixRequest(std::string_view body);

}  // namespace ebb::server
