// ebb/tokenizer.h — Hugging Face `tokenizer.json` tokenizers, byte for byte.
//
// A Tokenizer reproduces what the Hugging Face `tokenizers` library (Rust) does with the same
// tokenizer.json: the same ids from Encode and the same text from Decode. Supported:
//   models          BPE (byte-level and SentencePiece-style with byte_fallback), WordPiece,
//                   WordLevel
//   normalizers     NFC NFD NFKC NFKD Lowercase Strip StripAccents Replace Prepend BertNormalizer
//                   ByteLevel Sequence
//   pre-tokenizers  ByteLevel Split Metaspace Whitespace WhitespaceSplit BertPreTokenizer
//                   Punctuation Digits CharDelimiterSplit Sequence
//   post-processors TemplateProcessing BertProcessing RobertaProcessing ByteLevel Sequence
//   decoders        ByteLevel Metaspace WordPiece BPEDecoder Replace ByteFallback Fuse Strip
//                   Sequence
//   added tokens    special / lstrip / rstrip / normalized / single_word
// Anything else fails at load time with an ebb::Error(InvalidArgument) naming the JSON path of
// the construct, e.g. `tokenizer.json: /pre_tokenizer/type: unsupported pre-tokenizer "X"`; a
// tokenizer never loads into a state that would encode differently from the reference.
//
// Text is UTF-8. Encode rejects invalid UTF-8 with ebb::Error(InvalidArgument) naming the byte
// offset (the reference library cannot receive such input at all). Decode output is always
// valid UTF-8: byte sequences that do not form UTF-8 become U+FFFD exactly as the reference does.
//
// Thread-safety: a Tokenizer is immutable after loading; Encode/Decode and all accessors may be
// called concurrently from any number of threads. A StreamDecoder is a small mutable object for
// one sequence: use it from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/export.h"

namespace ebb {

class EBB_API Tokenizer {
 public:
  // Loads `path`: either a tokenizer.json file, or a folder that holds tokenizer.json (and
  // optionally tokenizer_config.json, which supplies BosToken/EosToken/PadToken/ChatTemplate).
  // Throws ebb::Error: NotFound when the file is missing, InvalidArgument when it is malformed
  // or uses an unsupported construct (the message names the JSON path).
  static std::unique_ptr<Tokenizer> FromFile(const std::filesystem::path& path);

  // Loads from the text of a tokenizer.json. `source_name` prefixes error messages.
  // `config_json` is the optional text of a tokenizer_config.json ("" when absent).
  static std::unique_ptr<Tokenizer> FromJson(std::string_view json,
                                             std::string_view source_name = "tokenizer.json",
                                             std::string_view config_json = {});

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text -> ids. `add_special_tokens` runs the post-processor (e.g. adds BOS / [CLS] ... [SEP]);
  // special-token text typed in `text` (e.g. "<|endoftext|>") is always recognised, as in the
  // reference. Throws ebb::Error(InvalidArgument) when `text` is not valid UTF-8.
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens = true) const;
  // Encode without tokenizer.json's "truncation" and "padding" blocks: for callers that cut
  // and pad themselves, to their own limit (ebb::Embed; sentence-transformers exports often
  // carry truncation 128 and padding Fixed 128 that their own max_seq_length overrides).
  std::vector<int32_t> EncodeRaw(std::string_view text, bool add_special_tokens = true) const;

  // Ids -> text, through the tokenizer's decoder. `skip_special_tokens` drops added tokens
  // marked special. Throws ebb::Error(InvalidArgument) for an id that has no token.
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // Vocabulary lookups. Added tokens take precedence over the model's vocabulary.
  int32_t TokenToId(std::string_view token) const;  // -1 when absent
  std::string IdToToken(int32_t id) const;          // "" when the id has no token
  // One more than the largest id that has a token (model vocabulary and added tokens).
  size_t vocab_size() const;
  // True for added tokens marked "special" (those Decode(…, true) skips).
  bool IsSpecial(int32_t id) const;
  // Ids of all special added tokens, ascending.
  std::vector<int32_t> SpecialIds() const;

  // From tokenizer_config.json when present (bos_token / eos_token / pad_token), else empty.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  // tokenizer_config.json "chat_template" (a string), "" when absent.
  const std::string& chat_template() const;
  // Where the tokenizer came from (file path or source_name).
  const std::string& source_name() const;

  struct Impl;  // defined in src/tokenizer/tokenizer_impl.h

 private:
  friend class StreamDecoder;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenizer for one generated sequence.
//
// Put(id) returns the text that became final with this token: only complete UTF-8, never a
// partial character (bytes of an unfinished character are held back until the character
// completes). Flush() returns whatever is held back (invalid or incomplete bytes appear as
// U+FFFD, as in Decode). For any id sequence, concat(Put(ids)...) + Flush() == Decode(ids).
//
// Ownership: does not own the Tokenizer, which must outlive it. Not thread-safe.
// After an exception from Put (an unknown id) the decoder is unchanged.
class EBB_API StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  std::string Put(int32_t id);
  std::string Flush();
  // Starts a new sequence that follows `context` (e.g. the prompt), whose text is not emitted:
  // the first Put then decodes in context, so a SentencePiece "▁named" after "… a dog" keeps
  // its space (without a context, decoders such as Strip or Metaspace drop it). Afterwards
  // concat(Put(ids)...) + Flush() == Decode(context + ids) minus its prefix Decode(context).
  // Throws ebb::Error(InvalidArgument) for an id of `context` with no token; the decoder is
  // then reset (no context).
  void Prime(std::span<const int32_t> context);
  // Forgets all state, to decode a new sequence.
  void Reset();

 private:
  const Tokenizer* tokenizer_;  // not owned
  bool skip_special_tokens_;
  std::vector<int32_t> window_;  // context tokens + tokens not yet emitted
  size_t prefix_count_ = 0;      // leading tokens of window_ whose text was emitted
  std::string prefix_text_;      // Decode(window_[0, prefix_count_))
};

}  // namespace ebb
