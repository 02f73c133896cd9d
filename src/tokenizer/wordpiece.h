// WordPiece model (BERT): greedy longest-match-first over the vocabulary, continuation pieces
// prefixed with continuing_subword_prefix ("##"); a word with no full segmentation, or longer
// than max_input_chars_per_word characters, becomes the single unk token.
// Thread-safety: immutable; Tokenize may be called concurrently.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/model.h"

namespace ebb::tok {

class WordPiece final : public Model {
 public:
  WordPiece(Vocab vocab, std::string unk_token, std::string prefix, size_t max_chars)
      : vocab_(std::move(vocab)),
        unk_token_(std::move(unk_token)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars) {}

  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }

 private:
  void PushUnk(std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::string unk_token_;
  std::string prefix_;
  size_t max_chars_;
};

std::unique_ptr<Model> MakeWordPiece(const JsonRef& j);

}  // namespace ebb::tok
