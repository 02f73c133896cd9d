// WordLevel model: each word is looked up whole; unknown words become unk_token.
// Thread-safety: immutable; Tokenize may be called concurrently.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/model.h"

namespace ebb::tok {

class WordLevel final : public Model {
 public:
  WordLevel(Vocab vocab, std::string unk_token)
      : vocab_(std::move(vocab)), unk_token_(std::move(unk_token)) {}
  void Tokenize(std::string_view word, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }

 private:
  Vocab vocab_;
  std::string unk_token_;
};

std::unique_ptr<Model> MakeWordLevel(const JsonRef& j);

}  // namespace ebb::tok
