// oga_tokenizer.cpp — genai's tokenizer and tokenizer-stream functions over ebb::Tokenizer,
// ebb::StreamDecoder and ebb::ChatTemplate.
//
// Behaviour kept from genai (its header documents it, its tokenizer does it):
//   - options start as add_special_tokens=false, skip_special_tokens=true;
//   - EncodeBatch pads on the right with the config's pad_token_id;
//   - the bot/eot/bor/eor ids come from genai_config.json model.{bot,eot,bor,eor}_token_id, else
//     from the token strings genai assumes for the model type; a model with neither is an error;
//   - a stream decodes with the tokenizer's skip_special_tokens, and its string lives until the
//     next call on that stream.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "oga_internal.h"

namespace {

using oga::NotNull;

// `s` quoted for an error message, cut to a readable length.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string q = "\"";
  q += s.substr(0, kMax);
  if (s.size() > kMax) q += "...";
  q += '"';
  return q;
}

// genai's option values: "true"/"false" or "1"/"0".
bool ParseOptionBool(const char* key, const char* value) {
  const std::string_view v = value;
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw std::invalid_argument(std::string("tokenizer option \"") + key + "\" has value " +
                              Quote(v) + "; expected \"true\", \"false\", \"1\" or \"0\"");
}

const ebb::Tokenizer& Tok(const OgaTokenizer* t) {
  NotNull(t, "tokenizer");
  return *t->tokenizer;
}

// A tool-call or reasoning marker id (genai's bot/eot/bor/eor). `field` is genai's config name,
// e.g. "bot_token_id". First genai_config.json model.<field> (genai reads it from the config the
// model was loaded from: the file in the model folder), then the token string genai falls back to
// for the model type, when that string is one token of this vocabulary. Throws, as genai does,
// when the model defines neither.
int32_t MarkerTokenId(const OgaTokenizer* t, const char* field) {
  const ebb::Tokenizer& tok = Tok(t);
  const ebb::ModelInfo& info = t->model->info();

  std::ifstream f(info.path / "genai_config.json");
  if (f) {
    const nlohmann::json config = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (config.is_object() && config.contains("model") && config["model"].is_object()) {
      const nlohmann::json& model = config["model"];
      if (auto it = model.find(field); it != model.end() && it->is_number_integer()) {
        return it->get<int32_t>();
      }
    }
  }

  // genai's fallback table for model packages that predate these config fields.
  const std::string_view name = field;
  const std::string& type = info.type;
  const char* text = nullptr;
  if (type == "qwen2" || type == "qwen3" || type == "phi3") {
    const bool phi = type == "phi3";
    if (name == "bot_token_id") text = phi ? "<|tool_call|>" : "<tool_call>";
    if (name == "eot_token_id") text = phi ? "<|/tool_call|>" : "</tool_call>";
  }
  if (type == "qwen3") {
    if (name == "bor_token_id") text = "<think>";
    if (name == "eor_token_id") text = "</think>";
  }
  if (text != nullptr) {
    if (int32_t id = tok.TokenToId(text); id >= 0) return id;
  }
  throw std::invalid_argument(std::string(field) +
                              " is not defined for this model (genai_config.json model." + field +
                              " is absent)");
}

// Renders `messages` with `template_str` (null or empty: the model's chat template), `tools` (a
// JSON value, passed as the template variable "tools") and `template_kwargs` (a JSON object whose
// members become template variables). The explicit `tools` wins over a "tools" in the kwargs.
std::string ApplyChatTemplate(const OgaTokenizer* t, const char* template_str, const char* messages,
                              const char* tools, const char* template_kwargs,
                              bool add_generation_prompt) {
  NotNull(t, "tokenizer");
  NotNull(messages, "messages");
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (template_kwargs != nullptr && *template_kwargs != '\0') {
    nlohmann::ordered_json kwargs;
    try {
      kwargs = nlohmann::ordered_json::parse(template_kwargs);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(std::string("template_kwargs is not valid JSON: ") + e.what());
    }
    if (!kwargs.is_object()) throw std::invalid_argument("template_kwargs is not a JSON object");
    extra = std::move(kwargs);
  }
  if (tools != nullptr && *tools != '\0') {
    try {
      extra["tools"] = nlohmann::ordered_json::parse(tools);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(std::string("tools is not valid JSON: ") + e.what());
    }
  }
  const std::string extra_text = extra.empty() ? std::string() : extra.dump();

  if (template_str == nullptr || *template_str == '\0') {
    if (!t->model->has_chat_template()) {
      throw std::invalid_argument("the model folder " + t->model->info().path.string() +
                                  " has no chat template (chat_template.jinja, "
                                  "tokenizer_config.json \"chat_template\" or chat_template.json); "
                                  "pass one as template_str");
    }
    return t->model->chat_template().RenderJson(messages, add_generation_prompt, extra_text);
  }
  // The caller's template gets the folder's special tokens (bos_token, ...) as the model's own
  // template does.
  const auto tmpl =
      ebb::ChatTemplate::ParseForModelDir(template_str, "template_str", t->model->info().path);
  return tmpl->RenderJson(messages, add_generation_prompt, extra_text);
}

}  // namespace

using oga::Guard;

// ---- Tokenizers

// The tokenizer is the model folder's tokenizer.json, owned by the model; the handle keeps the
// model alive, so the caller may destroy the OgaModel first.
OgaResult* OGA_API_CALL OgaCreateTokenizer(const OgaModel* model, OgaTokenizer** out) {
  return Guard("OgaCreateTokenizer", [&] {
    NotNull(out, "out");
    *out = nullptr;
    NotNull(model, "model");
    const ebb::Tokenizer* tok = model->model->tokenizer();
    if (tok == nullptr) {
      throw std::invalid_argument("the model folder " + model->model->info().path.string() +
                                  " has no tokenizer.json");
    }
    auto t = std::make_unique<OgaTokenizer>();
    t->model = model->model;
    t->tokenizer = tok;
    // genai's documented defaults (OgaUpdateTokenizerOptions): a prompt is usually rendered by a
    // chat template that already holds BOS, so Encode adds no special tokens.
    t->add_special_tokens = false;
    t->skip_special_tokens = true;
    t->eos_ids = t->model->info().eos_token_ids;
    *out = t.release();
  });
}

void OGA_API_CALL OgaDestroyTokenizer(OgaTokenizer* tokenizer) { delete tokenizer; }

// All pairs are checked before any is applied: a failed call changes nothing.
OgaResult* OGA_API_CALL OgaUpdateTokenizerOptions(OgaTokenizer* tokenizer, const char* const* keys,
                                                  const char* const* values, size_t num_options) {
  return Guard("OgaUpdateTokenizerOptions", [&] {
    NotNull(tokenizer, "tokenizer");
    if (num_options > 0) {
      NotNull(keys, "keys");
      NotNull(values, "values");
    }
    bool add = tokenizer->add_special_tokens;
    bool skip = tokenizer->skip_special_tokens;
    for (size_t i = 0; i < num_options; ++i) {
      NotNull(keys[i], "keys[i]");
      NotNull(values[i], "values[i]");
      const std::string_view key = keys[i];
      if (key == "add_special_tokens") {
        add = ParseOptionBool(keys[i], values[i]);
      } else if (key == "skip_special_tokens") {
        skip = ParseOptionBool(keys[i], values[i]);
      } else {
        throw std::invalid_argument("unknown tokenizer option " + Quote(key) +
                                    "; supported: add_special_tokens, skip_special_tokens");
      }
    }
    tokenizer->add_special_tokens = add;
    tokenizer->skip_special_tokens = skip;
  });
}

// genai_config.json model.bos_token_id; else tokenizer_config.json's bos_token; else -1.
OgaResult* OGA_API_CALL OgaTokenizerGetBosTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetBosTokenId", [&] {
    const ebb::Tokenizer& tok = Tok(tokenizer);
    NotNull(token_id, "token_id");
    int32_t id = tokenizer->model->info().bos_token_id;
    if (id < 0) id = tok.bos_id().value_or(-1);
    *token_id = id;
  });
}

// The array belongs to the tokenizer (valid until OgaDestroyTokenizer), as genai documents.
OgaResult* OGA_API_CALL OgaTokenizerGetEosTokenIds(const OgaTokenizer* tokenizer,
                                                   const int32_t** eos_token_ids,
                                                   size_t* token_count) {
  return Guard("OgaTokenizerGetEosTokenIds", [&] {
    NotNull(tokenizer, "tokenizer");
    NotNull(eos_token_ids, "eos_token_ids");
    NotNull(token_count, "token_count");
    *eos_token_ids = tokenizer->eos_ids.data();
    *token_count = tokenizer->eos_ids.size();
  });
}

// genai_config.json model.pad_token_id (ebb, like genai, falls back to the first EOS id).
OgaResult* OGA_API_CALL OgaTokenizerGetPadTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetPadTokenId", [&] {
    NotNull(tokenizer, "tokenizer");
    NotNull(token_id, "token_id");
    *token_id = tokenizer->model->info().pad_token_id;
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetBotTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetBotTokenId", [&] {
    NotNull(token_id, "token_id");
    *token_id = MarkerTokenId(tokenizer, "bot_token_id");
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetEotTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetEotTokenId", [&] {
    NotNull(token_id, "token_id");
    *token_id = MarkerTokenId(tokenizer, "eot_token_id");
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetBorTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetBorTokenId", [&] {
    NotNull(token_id, "token_id");
    *token_id = MarkerTokenId(tokenizer, "bor_token_id");
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetEorTokenId(const OgaTokenizer* tokenizer,
                                                  int32_t* token_id) {
  return Guard("OgaTokenizerGetEorTokenId", [&] {
    NotNull(token_id, "token_id");
    *token_id = MarkerTokenId(tokenizer, "eor_token_id");
  });
}

// Appends one row: the ids of `str`, with special tokens when the option add_special_tokens is on.
OgaResult* OGA_API_CALL OgaTokenizerEncode(const OgaTokenizer* tokenizer, const char* str,
                                           OgaSequences* sequences) {
  return Guard("OgaTokenizerEncode", [&] {
    const ebb::Tokenizer& tok = Tok(tokenizer);
    NotNull(str, "str");
    NotNull(sequences, "sequences");
    sequences->rows.push_back(tok.Encode(str, tokenizer->add_special_tokens));
  });
}

// An int32 tensor [count, longest], each row padded on the right with the pad token id (genai's
// PadInputs pads right).
OgaResult* OGA_API_CALL OgaTokenizerEncodeBatch(const OgaTokenizer* tokenizer, const char** strings,
                                                size_t count, OgaTensor** out) {
  return Guard("OgaTokenizerEncodeBatch", [&] {
    NotNull(out, "out");
    *out = nullptr;
    const ebb::Tokenizer& tok = Tok(tokenizer);
    if (count == 0) throw std::invalid_argument("count is 0; give at least one string");
    NotNull(strings, "strings");
    std::vector<std::vector<int32_t>> rows;
    rows.reserve(count);
    size_t longest = 0;
    for (size_t i = 0; i < count; ++i) {
      if (strings[i] == nullptr) {
        throw std::invalid_argument("strings[" + std::to_string(i) + "] is null");
      }
      rows.push_back(tok.Encode(strings[i], tokenizer->add_special_tokens));
      longest = std::max(longest, rows.back().size());
    }
    const int32_t pad = tokenizer->model->info().pad_token_id;
    auto t = std::make_shared<oga::TensorData>();
    t->type = OgaElementType_int32;
    t->shape = {static_cast<int64_t>(count), static_cast<int64_t>(longest)};
    std::vector<int32_t> ids(count * longest, pad);
    for (size_t i = 0; i < count; ++i) {
      std::copy(rows[i].begin(), rows[i].end(), ids.begin() + i * longest);
    }
    t->owned.resize(ids.size() * sizeof(int32_t));
    if (!ids.empty()) std::memcpy(t->owned.data(), ids.data(), t->owned.size());
    t->data = t->owned.data();
    *out = new OgaTensor{std::move(t)};
  });
}

// One string per row of an int32 tensor [rows, length]; every id of a row is decoded (padding
// too, as genai does), honouring skip_special_tokens.
OgaResult* OGA_API_CALL OgaTokenizerDecodeBatch(const OgaTokenizer* tokenizer,
                                                const OgaTensor* tensor, OgaStringArray** out) {
  return Guard("OgaTokenizerDecodeBatch", [&] {
    NotNull(out, "out");
    *out = nullptr;
    const ebb::Tokenizer& tok = Tok(tokenizer);
    NotNull(tensor, "tensor");
    NotNull(tensor->t.get(), "tensor data");
    const oga::TensorData& t = *tensor->t;
    if (t.type != OgaElementType_int32) {
      throw std::invalid_argument("tensor element type is " + std::to_string(t.type) +
                                  "; expected int32 (" + std::to_string(OgaElementType_int32) +
                                  ")");
    }
    if (t.shape.size() != 2) {
      throw std::invalid_argument("tensor rank is " + std::to_string(t.shape.size()) +
                                  "; expected a 2D tensor [rows, length]");
    }
    const size_t rows = static_cast<size_t>(t.shape[0]);
    const size_t len = static_cast<size_t>(t.shape[1]);
    const int32_t* ids = static_cast<const int32_t*>(t.data);
    if (rows * len > 0) NotNull(ids, "tensor data");
    auto a = std::make_unique<OgaStringArray>();
    a->items.reserve(rows);
    for (size_t r = 0; r < rows; ++r) {
      std::span<const int32_t> row;
      if (len > 0) row = std::span<const int32_t>(ids + r * len, len);
      a->items.push_back(tok.Decode(row, tokenizer->skip_special_tokens));
    }
    *out = a.release();
  });
}

// `str` must be exactly one token (an added token or a vocabulary entry, e.g. "<|im_end|>").
OgaResult* OGA_API_CALL OgaTokenizerToTokenId(const OgaTokenizer* tokenizer, const char* str,
                                              int32_t* token_id) {
  return Guard("OgaTokenizerToTokenId", [&] {
    const ebb::Tokenizer& tok = Tok(tokenizer);
    NotNull(str, "str");
    NotNull(token_id, "token_id");
    const int32_t id = tok.TokenToId(str);
    if (id < 0) {
      throw std::invalid_argument(Quote(str) + " is not a token of the vocabulary (" +
                                  tok.source_name() + ")");
    }
    *token_id = id;
  });
}

// The string is freed with OgaDestroyString.
OgaResult* OGA_API_CALL OgaTokenizerDecode(const OgaTokenizer* tokenizer, const int32_t* tokens,
                                           size_t token_count, const char** out_string) {
  return Guard("OgaTokenizerDecode", [&] {
    NotNull(out_string, "out_string");
    *out_string = nullptr;
    const ebb::Tokenizer& tok = Tok(tokenizer);
    if (token_count > 0) NotNull(tokens, "tokens");
    std::span<const int32_t> ids;
    if (token_count > 0) ids = std::span<const int32_t>(tokens, token_count);
    *out_string = oga::CopyString(tok.Decode(ids, tokenizer->skip_special_tokens));
  });
}

OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplate(const OgaTokenizer* tokenizer,
                                                      const char* template_str,
                                                      const char* messages, const char* tools,
                                                      bool add_generation_prompt,
                                                      const char** out_string) {
  return Guard("OgaTokenizerApplyChatTemplate", [&] {
    NotNull(out_string, "out_string");
    *out_string = nullptr;
    *out_string = oga::CopyString(ApplyChatTemplate(tokenizer, template_str, messages, tools,
                                                    nullptr, add_generation_prompt));
  });
}

OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplateWithOptions(
    const OgaTokenizer* tokenizer, const char* template_str, const char* messages,
    const char* tools, const char* template_kwargs, bool add_generation_prompt,
    const char** out_string) {
  return Guard("OgaTokenizerApplyChatTemplateWithOptions", [&] {
    NotNull(out_string, "out_string");
    *out_string = nullptr;
    *out_string = oga::CopyString(ApplyChatTemplate(tokenizer, template_str, messages, tools,
                                                    template_kwargs, add_generation_prompt));
  });
}

// ---- Tokenizer streams

// The stream takes the tokenizer's skip_special_tokens as it is now (genai's default: on). It
// keeps the model (and so the tokenizer) alive: the tokenizer handle may be destroyed first.
OgaResult* OGA_API_CALL OgaCreateTokenizerStream(const OgaTokenizer* tokenizer,
                                                 OgaTokenizerStream** out) {
  return Guard("OgaCreateTokenizerStream", [&] {
    NotNull(out, "out");
    *out = nullptr;
    const ebb::Tokenizer& tok = Tok(tokenizer);
    auto s = std::make_unique<OgaTokenizerStream>();
    s->model = tokenizer->model;
    s->decoder = std::make_unique<ebb::StreamDecoder>(tok, tokenizer->skip_special_tokens);
    // genai's stream decodes generated tokens as the middle of a text: a SentencePiece "▁named"
    // gives " named" (a program prints the prompt, then the pieces). ebb's decoder strips a
    // leading space at the start of a text, as Decode must; one ordinary token of context makes
    // the first piece decode mid-text. Its text is never emitted.
    const std::vector<int32_t> context = tok.EncodeRaw("a", false);
    if (!context.empty()) s->decoder->Prime(context);
    *out = s.release();
  });
}

void OGA_API_CALL OgaDestroyTokenizerStream(OgaTokenizerStream* stream) { delete stream; }

// The text that became final with `token` (often "", e.g. mid-character); *out stays valid until
// the next call on this stream or its destruction. After an error the stream is unchanged.
OgaResult* OGA_API_CALL OgaTokenizerStreamDecode(OgaTokenizerStream* stream, int32_t token,
                                                 const char** out) {
  return Guard("OgaTokenizerStreamDecode", [&] {
    NotNull(stream, "stream");
    NotNull(out, "out");
    *out = nullptr;
    const ebb::Tokenizer* tok = stream->model->tokenizer();
    if (tok != nullptr && tok->IsSpecial(token)) {
      // genai (onnxruntime-extensions) starts a new text after a special token: "▁Once" after
      // <s> gives "Once". Held-back bytes are flushed first, so nothing is lost.
      std::string held = stream->decoder->Flush();
      stream->decoder->Reset();
      stream->last = held + stream->decoder->Put(token);
    } else {
      stream->last = stream->decoder->Put(token);
    }
    *out = stream->last.c_str();
  });
}
