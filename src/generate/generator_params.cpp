// GeneratorParams::Set: the request keys of the option table (ebb/options.h).
#include <climits>
#include <string>

#include "core/option_parse.h"
#include "ebb/error.h"
#include "ebb/generator.h"

namespace ebb {

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
  } else if (key == "seed") {
    seed = static_cast<uint64_t>(internal::ParseInt(key, value, 0, INT64_MAX));
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
