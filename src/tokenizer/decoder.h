// Decoders: turn the token strings of a Decode call back into text (ByteLevel bytes,
// "▁" -> " ", "<0x0A>" byte tokens, "##" continuations, …). A decoder transforms the list of
// token strings (decode_chain in the reference); Decode concatenates the final list.
//
// Thread-safety: immutable after construction; may be used concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_ref.h"

namespace ebb::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites `tokens` in place; every string stays valid UTF-8.
  virtual void DecodeChain(std::vector<std::string>& tokens) const = 0;
  // True when the chain contains ByteFallback: the text of a run of "<0xXX>" tokens is only
  // final once the run ends (an invalid run becomes one U+FFFD per byte).
  virtual bool HasByteFallback() const { return false; }

  std::string Decode(std::vector<std::string>& tokens) const;
};

// "<0xAB>" -> 0xAB; -1 when `token` is not a byte-fallback token.
int ParseByteFallbackToken(std::string_view token);

// Builds the decoder described by `j`. Throws ebb::Error(InvalidArgument) naming the JSON
// path for an unsupported or malformed decoder.
std::unique_ptr<Decoder> MakeDecoder(const JsonRef& j);

}  // namespace ebb::tok
