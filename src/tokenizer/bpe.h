// BPE model: byte-level (GPT-2, Llama-3, Qwen2) and SentencePiece-style (Llama-2, Phi-3:
// byte_fallback, unk_token, fuse_unk), with continuing_subword_prefix / end_of_word_suffix and
// ignore_merges. Merging uses a priority queue over a linked list of symbols, O(n log n) per
// word, with the reference's exact tie-breaking (lowest rank, then leftmost).
//
// Speed: results for words up to kMaxCachedBytes are cached (sharded, mutex-guarded; bounded
// by kCacheCapacity entries, after which no more entries are added). For SentencePiece-style
// vocabularies, where a whole segment is one "word", the word is cut before each "▁" that
// follows another character when no merge can produce a token spanning such a cut (checked at
// load); the cut does not change the result and lets long inputs use the cache.
//
// Thread-safety: Tokenize may be called concurrently.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/model.h"

namespace ebb::tok {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class Bpe final : public Model {
 public:
  static constexpr size_t kMaxCachedBytes = 128;
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheCapacity = 1 << 16;

  // `merges` are (left, right) token strings in rank order. Throws ebb::Error
  // (InvalidArgument) "merge N: …" when a merge names a token missing from the vocabulary.
  Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options);

  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }

  // Whether SentencePiece-style cutting at "▁" is in use (for tests).
  bool cuts_at_metaspace() const { return cut_at_metaspace_; }

 private:
  void TokenizeCached(std::string_view word, std::vector<int32_t>& out) const;
  void MergeWord(std::string_view word, std::vector<int32_t>& out) const;
  int32_t CharId(std::string_view ch, char32_t cp) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return HashBytes(s); }
  };
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };

  Vocab vocab_;
  PairMap merges_;
  BpeOptions options_;
  int32_t unk_id_ = -1;                  // -1: no unk token, or it is not in the vocabulary
  std::array<int32_t, 256> byte_ids_;    // "<0xXX>" tokens for byte_fallback, -1 when absent
  std::vector<int32_t> small_char_ids_;  // code point < 0x800 -> id (plain vocab lookup)
  bool plain_chars_ = true;              // no prefix/suffix: a char's id is vocab[char]
  bool cut_at_metaspace_ = false;
  mutable std::array<CacheShard, kCacheShards> cache_;
};

std::unique_ptr<Model> MakeBpe(const JsonRef& j);

}  // namespace ebb::tok
