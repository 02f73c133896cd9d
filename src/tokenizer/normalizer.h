// Normalizers: the first stage of the pipeline, applied to each text segment between added
// tokens (and to the content of added tokens marked "normalized"). Only the resulting text
// matters to ebb (the reference also tracks offsets, which ebb does not expose).
//
// Thread-safety: immutable after construction; Normalize may run concurrently.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/json_ref.h"
#include "tokenizer/regex.h"

namespace ebb::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `s` (valid UTF-8) in place; the result is valid UTF-8.
  virtual void Normalize(std::string& s) const = 0;
};

// Builds the normalizer described by `j` (the "normalizer" member of tokenizer.json, or one
// element of a Sequence). Throws ebb::Error(InvalidArgument) naming the JSON path for an
// unsupported or malformed normalizer.
std::unique_ptr<Normalizer> MakeNormalizer(const JsonRef& j);

// Builds a {"String": …} (literal) or {"Regex": …} (Oniguruma syntax) pattern; shared with the
// Split pre-tokenizer and the Replace decoder.
Pattern MakePattern(const JsonRef& j);

}  // namespace ebb::tok
