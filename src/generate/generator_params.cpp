// GeneratorParams::Set: the request keys of the option table (ebb/options.h).
#include <charconv>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_util.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generator.h"

namespace ebb {
namespace {

// One bias: a finite number from -100 to 100.
float ParseBias(std::string_view id_text, double bias) {
  if (!(bias >= -100 && bias <= 100)) {
    throw Error(ErrorCode::InvalidArgument,
                "logit_bias: the bias of token " + std::string(id_text) + " is " +
                    internal::FormatNumber(bias) + ", out of range: need -100 to 100");
  }
  return static_cast<float>(bias);
}

int32_t ParseTokenId(std::string_view text) {
  const std::string t = internal::Trim(text);
  int64_t id = -1;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), id);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || id < 0 || id > INT32_MAX) {
    throw Error(ErrorCode::InvalidArgument, "logit_bias: '" +
                                                internal::EscapeForMessage(std::string(text)) +
                                                "' is not a token id (a non-negative integer)");
  }
  return static_cast<int32_t>(id);
}

// "ID=BIAS,ID=BIAS" or a JSON object {"ID": BIAS, ...}; "" is no bias.
std::map<int32_t, float> ParseLogitBias(std::string_view value) {
  std::map<int32_t, float> out;
  const std::string v = internal::Trim(value);
  if (v.empty()) return out;
  if (v.front() == '{') {
    const nlohmann::json j = internal::ParseJsonDocument(v, "logit_bias");
    if (!j.is_object()) {
      throw Error(ErrorCode::InvalidArgument,
                  "logit_bias must be a JSON object of token id -> bias, e.g. {\"50256\": -100}");
    }
    for (const auto& [k, b] : j.items()) {
      const int32_t id = ParseTokenId(k);
      if (!b.is_number()) {
        throw Error(ErrorCode::InvalidArgument,
                    "logit_bias: the bias of token " + k + " must be a number from -100 to 100");
      }
      out[id] = ParseBias(k, b.get<double>());
    }
    return out;
  }
  for (const std::string& item : internal::Split(v, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw Error(ErrorCode::InvalidArgument,
                  "logit_bias: '" + internal::EscapeForMessage(item) +
                      "' must be written ID=BIAS (e.g. 50256=-100), or give a JSON object");
    }
    const std::string id_text = item.substr(0, eq);
    const int32_t id = ParseTokenId(id_text);
    const std::string what = "logit_bias (token " + std::to_string(id) + ")";
    out[id] = static_cast<float>(internal::ParseFloat(what, item.substr(eq + 1), -100, 100));
  }
  return out;
}

}  // namespace

void GeneratorParams::Set(std::string_view key, std::string_view value) {
  const OptionSpec* spec = FindOption(key);
  if (spec == nullptr) internal::ThrowUnknownKey(key, OptionScope::kRequest);
  if (!HasScope(*spec, OptionScope::kRequest)) {
    internal::ThrowWrongScope(*spec, OptionScope::kRequest);
  }
  if (key.starts_with("embed.")) {
    throw Error(ErrorCode::InvalidArgument,
                "option '" + std::string(key) +
                    "' is an embedding request option, not a generation one; set it on "
                    "EmbedRequest (EmbedRequest::Set, ebb embed --option)");
  }
  if (key == "max_new_tokens" || key == "stop" || key == "add_generation_prompt") {
    throw Error(ErrorCode::InvalidArgument,
                "option '" + std::string(key) +
                    "' is the generation loop's, not a Generator parameter; set it on the "
                    "request (GenerateRequest::Set, ebb_request_set_option, request options)");
  }
  internal::ValidateOptionValue(*spec, value);  // type and range, from the table
  if (key == "max_length") {
    max_length = static_cast<int32_t>(internal::ParseInt(key, value, 0, INT32_MAX));
  } else if (key == "batch_size") {
    batch_size = static_cast<int32_t>(internal::ParseInt(key, value, 1, 65536));
  } else if (key == "do_sample") {
    do_sample = internal::ParseBool(key, value);
  } else if (key == "top_k") {
    top_k = static_cast<int32_t>(internal::ParseInt(key, value, 0, INT32_MAX));
  } else if (key == "top_p") {
    top_p = static_cast<float>(internal::ParseFloat(key, value, 0, 1));
  } else if (key == "temperature") {
    temperature = static_cast<float>(internal::ParseFloat(key, value, 0, 100));
  } else if (key == "repetition_penalty") {
    repetition_penalty = static_cast<float>(internal::ParseFloat(key, value, 0.01, 100));
  } else if (key == "presence_penalty") {
    presence_penalty = static_cast<float>(internal::ParseFloat(key, value, -2, 2));
  } else if (key == "frequency_penalty") {
    frequency_penalty = static_cast<float>(internal::ParseFloat(key, value, -2, 2));
  } else if (key == "logit_bias") {
    logit_bias = ParseLogitBias(value);
  } else if (key == "logprobs") {
    logprobs = internal::ParseBool(key, value);
  } else if (key == "top_logprobs") {
    top_logprobs = static_cast<int32_t>(internal::ParseInt(key, value, 0, 20));
  } else if (key == "seed") {
    seed = static_cast<uint64_t>(internal::ParseInt(key, value, 0, INT64_MAX));
  } else if (key == "cache_prompt") {
    cache_prompt = internal::ParseBool(key, value);
  } else if (key == "json_schema") {
    // Checked for JSON here (a typo fails where it is set); compiled when a generator uses it.
    if (!value.empty() && !nlohmann::json::accept(value)) {
      throw Error(ErrorCode::InvalidArgument,
                  "json_schema is not valid JSON: give a JSON Schema's text, e.g. "
                  "{\"type\":\"object\",\"properties\":{...}}");
    }
    json_schema = value;
  } else if (key == "regex") {
    regex = value;
  } else if (key == "grammar") {
    grammar = value;
  } else if (key == "constraint_trigger") {
    constraint_trigger = value;
  } else if (key == "constraint_prefix") {
    constraint_prefix = value;
  } else if (key == "constraint_suffix") {
    constraint_suffix = value;
  } else if (key == "kv_cache.mode") {
    kv_mode = ParseKvMode(value);
  } else if (key == "prefill_chunk_size") {
    prefill_chunk_size = static_cast<int32_t>(internal::ParseInt(key, value, 0, INT32_MAX));
  } else {
    throw Error(ErrorCode::Internal,
                "option table row '" + std::string(key) + "' has no GeneratorParams field");
  }
}

}  // namespace ebb
