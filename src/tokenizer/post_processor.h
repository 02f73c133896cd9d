// Post-processor for single sequences: the special tokens added around the encoded text when
// Encode(…, add_special_tokens=true) (TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel — which changes only offsets — and Sequence of these). Resolved at load time to a
// fixed prefix and suffix of ids.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/json_ref.h"

namespace ebb::tok {

struct PostProcessor {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;

  size_t AddedCount() const { return prefix.size() + suffix.size(); }
  // ids -> prefix + ids + suffix.
  void Apply(std::vector<int32_t>& ids) const;
};

// Reads tokenizer.json's "post_processor". Throws ebb::Error(InvalidArgument) naming the JSON
// path for unsupported or malformed processors.
PostProcessor MakePostProcessor(const JsonRef& j);

}  // namespace ebb::tok
