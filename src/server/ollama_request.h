// Ollama request bodies (POST /api/generate, /api/chat, /api/embed, /api/embeddings, /api/show)
// parsed into what ebb's routes need (docs/http_api.md#ollama-api). Pure functions of the JSON,
// as openai_request.h, so a fuzzer can drive them.
//
// Contract: every field Ollama documents is honoured, mapped onto ebb's request keys, or refused
// with a 400 naming it (ApiException with `param`); an `options` key ebb cannot honour is named
// in `ignored` (the route logs it once and returns it in the X-Ebb-Ignored-Options header),
// never dropped silently. Model names lose a ":latest" tag (ebb's ids are folder names).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/model_manager.h"

namespace ebb::server {

struct OllamaGenerateRequest {
  std::string model;
  bool chat = false;                  // /api/chat (messages) or /api/generate (prompt)
  std::string prompt;                 // generate
  std::string system;                 // generate: the system message
  bool raw = false;                   // generate: the prompt as is, no chat template
  std::vector<ChatMessage> messages;  // chat
  bool stream = true;                 // Ollama's default
  std::optional<KeepAlive> keep_alive;
  // ebb request keys from Ollama's options (temperature, top_k, top_p, repetition_penalty,
  // presence_penalty, frequency_penalty, seed, max_new_tokens, max_length), in order.
  std::vector<std::pair<std::string, std::string>> options;
  std::optional<int32_t> num_ctx;  // caps max_length (prompt + generated)
  std::vector<std::string> stop;
  bool sampled = false;              // temperature > 0 was given: sample (do_sample)
  std::vector<std::string> ignored;  // options ebb does not honour, by Ollama's name
};

struct OllamaEmbedRequest {
  std::string model;
  std::vector<std::string> texts;
  bool truncate = true;  // Ollama's default: cut inputs to the context; false: refuse them
  std::optional<int32_t> dimensions;
  std::optional<KeepAlive> keep_alive;
  std::vector<std::string> ignored;
};

// Throws ApiException (400 naming the field) for invalid JSON, a missing model, a field of the
// wrong type, or one ebb does not support: images, tools, template, suffix, context, think.
// `format` ("json" or a JSON Schema) becomes the request option json_schema; a schema keyword
// ebb cannot honour is a 400 naming it.
OllamaGenerateRequest ParseOllamaGenerate(std::string_view body, bool chat);
// /api/embed (input: a string or a list of strings) or, with legacy, /api/embeddings (prompt).
OllamaEmbedRequest ParseOllamaEmbed(std::string_view body, bool legacy);
// The model name of /api/show ("model", or the older "name").
std::string ParseOllamaShow(std::string_view body);
// A model name without Ollama's ":latest" tag.
std::string OllamaModelId(std::string name);

}  // namespace ebb::server
