// GeneratorParams::Set: the request keys of the option table (ebb/options.h).
#include "generate/generator_params.h"

#include <charconv>
#include <climits>
#include <limits>
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

// ParseFloat's bounds for a bias: any finite number, so that CheckLogitBias gives the one
// range message.
constexpr double kAnyBias = std::numeric_limits<double>::max();

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
      out[id] = internal::CheckLogitBias(k, b.get<double>());
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
    out[id] = internal::CheckLogitBias(
        id_text, internal::ParseFloat(what, item.substr(eq + 1), -kAnyBias, kAnyBias));
  }
  return out;
}

}  // namespace

namespace internal {

float CheckLogitBias(std::string_view id_text, double bias) {
  if (!(bias >= -100 && bias <= 100)) {
    throw Error(ErrorCode::InvalidArgument, "logit_bias: the bias of token " + Trim(id_text) +
                                                " is " + FormatNumber(bias) +
                                                ", out of range: need -100 to 100");
  }
  return static_cast<float>(bias);
}

ResolvedSampling ResolveSampling(const GeneratorParams& p, const SearchDefaults& sd) {
  ResolvedSampling r;
  r.do_sample = p.do_sample.value_or(sd.do_sample.value_or(false));
  r.top_k = p.top_k.value_or(sd.top_k.value_or(0));
  r.top_p = p.top_p.value_or(sd.top_p.value_or(1.0f));
  r.temperature = p.temperature.value_or(sd.temperature.value_or(1.0f));
  r.repetition_penalty = p.repetition_penalty.value_or(sd.repetition_penalty.value_or(1.0f));
  CheckOptionRange("batch_size", p.batch_size);
  CheckOptionRange("max_length", p.max_length, "0 = the default");
  CheckOptionRange("temperature", r.temperature, "0 = greedy");
  CheckOptionRange("top_p", r.top_p, "1 = off, 0 = greedy");
  CheckOptionRange("top_k", r.top_k, "0 = off");
  CheckOptionRange("repetition_penalty", r.repetition_penalty, "1 = off");
  CheckOptionRange("presence_penalty", p.presence_penalty, "0 = off");
  CheckOptionRange("frequency_penalty", p.frequency_penalty, "0 = off");
  CheckOptionRange("top_logprobs", p.top_logprobs);
  for (const auto& [id, bias] : p.logit_bias) CheckLogitBias(std::to_string(id), bias);
  return r;
}

}  // namespace internal

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
