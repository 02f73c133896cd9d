// Tokenizer::Impl: the loaded pipeline of a Tokenizer. Private to src/tokenizer; immutable
// after FromJson returns (see ebb/tokenizer.h for the thread-safety contract).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ebb/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/decoder.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace ebb {

struct Tokenizer::Impl {
  std::string source;
  std::unique_ptr<tok::Normalizer> normalizer;       // may be null
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<tok::Model> model;
  std::unique_ptr<tok::Decoder> decoder;  // may be null: tokens joined with " "
  tok::PostProcessor post;
  tok::AddedVocabulary added;

  bool truncate = false;
  size_t trunc_max_length = 0;
  bool trunc_left = false;

  bool pad = false;
  bool pad_fixed = false;
  size_t pad_length = 0;
  size_t pad_multiple = 0;
  int32_t pad_id = 0;
  bool pad_left = false;

  std::optional<int32_t> bos, eos, pad_token;
  std::string chat_template;

  bool decoder_has_byte_fallback = false;

  // The token text of `id` (added tokens first), or nullopt when the id has no token.
  std::optional<std::string_view> TokenText(int32_t id) const {
    if (const tok::AddedToken* at = added.ById(id)) return std::string_view(at->content);
    if (model->vocab().HasId(id)) return model->vocab().Token(id);
    return std::nullopt;
  }
  // Whether streaming must hold back the text of `window`: its last token that Decode keeps
  // (skipped special tokens do not end a run) is a byte-fallback token, so the run of byte
  // tokens may continue and change how it decodes.
  bool StreamHoldsBack(const std::vector<int32_t>& window, bool skip_special) const {
    if (!decoder_has_byte_fallback) return false;
    for (size_t k = window.size(); k-- > 0;) {
      auto text = TokenText(window[k]);
      if (!text) return false;
      if (skip_special && added.IsSpecialContent(*text)) continue;
      return tok::ParseByteFallbackToken(*text) >= 0;
    }
    return false;
  }

  void EncodeInto(std::string_view text, std::vector<int32_t>& ids) const;
  // Tokenizer::Encode (truncate_and_pad) and Tokenizer::EncodeRaw (not).
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens,
                              bool truncate_and_pad) const;
  void EncodeSegment(std::string_view segment, bool at_start, std::vector<int32_t>& ids) const;
};

}  // namespace ebb
