// tokenizer/token_bytes.h — the bytes each token adds to a text, for constrained decoding.
//
// A grammar constrains bytes, and a model picks tokens: the constraint engine needs, for every
// id, exactly the bytes the token contributes in the middle of a generated text (the decoder's
// leading-space rules for a first token do not apply mid-text). Decode cannot give them for a
// token that holds part of a UTF-8 character (it writes U+FFFD), so:
//   - a byte-fallback token "<0xAB>" is the byte 0xAB;
//   - otherwise the token is decoded after a one-token context ("a") and the context's text is
//     cut off, which gives "▁the" -> " the" for SentencePiece and applies Replace/Strip rules;
//   - when that text holds U+FFFD that the token's own text does not (a partial character), the
//     token's characters are read as byte-level characters (GPT-2's byte alphabet), which gives
//     the raw bytes for byte-level BPE; a token that is neither stays as decoded.
// Special added tokens get their content text and are marked special (a grammar never allows
// them; a lazy constraint's trigger may still be one).
//
// Cost: one two-token Decode per id (about 0.1 s for a 32k vocabulary); callers compute it once
// per model and share it.
#pragma once

#include <string>
#include <vector>

#include "ebb/tokenizer.h"

namespace ebb::internal {

struct TokenBytes {
  std::vector<std::string> bytes;  // by id, vocab_size() entries ("" for ids with no token)
  std::vector<bool> special;       // by id: special added tokens
};

TokenBytes ComputeTokenBytes(const Tokenizer& tokenizer);

}  // namespace ebb::internal
