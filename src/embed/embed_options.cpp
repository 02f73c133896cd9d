// EmbedRequest::Set (the embed.* request keys of the option table) and the enum names.
#include <climits>
#include <string>

#include "core/option_parse.h"
#include "ebb/embedding.h"
#include "ebb/error.h"

namespace ebb {

std::string_view PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kAuto:
      return "auto";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
    case Pooling::kModel:
      return "model";
    case Pooling::kMax:
      return "max";
    case Pooling::kMeanSqrtLen:
      return "mean_sqrt_len";
    case Pooling::kWeightedMean:
      return "weightedmean";
  }
  return "?";
}

Pooling ParsePooling(std::string_view name) {
  for (Pooling p : {Pooling::kAuto, Pooling::kMean, Pooling::kCls, Pooling::kLast, Pooling::kModel,
                    Pooling::kMax, Pooling::kMeanSqrtLen, Pooling::kWeightedMean}) {
    if (PoolingName(p) == name) return p;
  }
  throw Error(ErrorCode::InvalidArgument,
              "embed.pooling='" + std::string(name) +
                  "' is not one of: auto mean cls last model max mean_sqrt_len weightedmean");
}

std::string_view TruncateName(Truncate truncate) {
  switch (truncate) {
    case Truncate::kEnd:
      return "end";
    case Truncate::kStart:
      return "start";
    case Truncate::kError:
      return "error";
  }
  return "?";
}

Truncate ParseTruncate(std::string_view name) {
  for (Truncate t : {Truncate::kEnd, Truncate::kStart, Truncate::kError}) {
    if (TruncateName(t) == name) return t;
  }
  throw Error(ErrorCode::InvalidArgument,
              "embed.truncate='" + std::string(name) + "' is not one of: end start error");
}

void EmbedRequest::Set(std::string_view key, std::string_view value) {
  const OptionSpec* spec = FindOption(key);
  if (spec == nullptr || (HasScope(*spec, OptionScope::kRequest) && !key.starts_with("embed."))) {
    if (spec == nullptr) internal::ThrowUnknownKey(key, OptionScope::kRequest);
    throw Error(ErrorCode::InvalidArgument,
                "option '" + std::string(key) +
                    "' is a generation request option, not an embedding one; the embedding keys "
                    "are embed.* (docs/options.md)");
  }
  if (!HasScope(*spec, OptionScope::kRequest)) {
    internal::ThrowWrongScope(*spec, OptionScope::kRequest);
  }
  internal::ValidateOptionValue(*spec, value);
  EmbedOptions& o = options;
  if (key == "embed.pooling") {
    o.pooling = ParsePooling(value);
  } else if (key == "embed.normalize") {
    o.normalize = internal::ParseBool(key, value);
  } else if (key == "embed.truncate") {
    o.truncate = ParseTruncate(value);
  } else if (key == "embed.dimensions") {
    o.dimensions = static_cast<int32_t>(internal::ParseInt(key, value, 0, INT32_MAX));
  } else if (key == "embed.batch_size") {
    o.batch_size = static_cast<int32_t>(internal::ParseInt(key, value, 1, 65536));
  } else if (key == "embed.max_batch_tokens") {
    o.max_batch_tokens = internal::ParseInt(key, value, 1, INT64_MAX);
  } else if (key == "embed.max_padding") {
    o.max_padding = internal::ParseFloat(key, value, 0, 1000);
    if (o.max_padding > 0 && o.max_padding < 1) {
      throw Error(ErrorCode::InvalidArgument,
                  "embed.max_padding=" + std::string(value) +
                      " is below 1 (a batch always holds at least its real tokens); use 0 for no "
                      "limit or a ratio of 1 or more, e.g. 1.25");
    }
  } else {
    throw Error(ErrorCode::Internal,
                "option table row '" + std::string(key) + "' has no EmbedOptions field");
  }
}

}  // namespace ebb
