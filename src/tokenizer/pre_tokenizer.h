// Pre-tokenizers: split each normalized text segment into the "words" the model encodes
// independently, possibly transforming them (ByteLevel maps bytes to byte characters,
// Metaspace replaces spaces with "▁").
//
// Thread-safety: immutable after construction; Run may be called concurrently with distinct
// PieceLists.
#pragma once

#include <memory>

#include "tokenizer/json_ref.h"
#include "tokenizer/piece_list.h"

namespace ebb::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with the pre-tokenized pieces; `scratch` is a caller-owned temporary.
  virtual void Run(PieceList& pieces, PieceList& scratch) const {
    scratch.Clear();
    Apply(pieces, scratch);
    std::swap(pieces, scratch);
  }
  // Appends the pre-tokenized form of every piece of `in` to `out`.
  virtual void Apply(const PieceList& in, PieceList& out) const = 0;
};

// Builds the pre-tokenizer described by `j`. Throws ebb::Error(InvalidArgument) naming the
// JSON path for an unsupported or malformed pre-tokenizer.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const JsonRef& j);

// The GPT-2 pre-tokenization regex used by ByteLevel's use_regex.
extern const char* const kGpt2SplitRegex;

}  // namespace ebb::tok
