#include "tokenizer/wordpiece.h"

#include "ebb/error.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {

void WordPiece::PushUnk(std::vector<int32_t>& out) const {
  const int32_t id = vocab_.Find(unk_token_);
  if (id < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "WordPiece unk_token \"" + unk_token_ + "\" is not in the vocabulary");
  }
  out.push_back(id);
}

void WordPiece::Tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (CountCodePoints(word) > max_chars_) {
    PushUnk(out);
    return;
  }
  const size_t mark = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    int32_t found = -1;
    while (start < end) {
      std::string_view sub = word.substr(start, end - start);
      int32_t id;
      if (start > 0) {
        candidate.assign(prefix_);
        candidate.append(sub);
        id = vocab_.Find(candidate);
      } else {
        id = vocab_.Find(sub);
      }
      if (id >= 0) {
        found = id;
        break;
      }
      size_t char_start;
      PrevCodePoint(word, end, char_start);
      end = char_start;
    }
    if (found < 0) {
      out.resize(mark);
      PushUnk(out);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::unique_ptr<Model> MakeWordPiece(const JsonRef& j) {
  Vocab vocab = Vocab::FromJson(j.At("vocab"));
  const int64_t max_chars = j.GetInt("max_input_chars_per_word", 100);
  if (max_chars < 0) j.At("max_input_chars_per_word").Fail("expected a non-negative integer");
  return std::make_unique<WordPiece>(std::move(vocab), j.GetString("unk_token", "[UNK]"),
                                     j.GetString("continuing_subword_prefix", "##"),
                                     static_cast<size_t>(max_chars));
}

}  // namespace ebb::tok
