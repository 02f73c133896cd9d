#include "tokenizer/wordlevel.h"

#include "ebb/error.h"

namespace ebb::tok {

void WordLevel::Tokenize(std::string_view word, std::vector<int32_t>& out) const {
  int32_t id = vocab_.Find(word);
  if (id < 0) id = vocab_.Find(unk_token_);
  if (id < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "WordLevel unk_token \"" + unk_token_ + "\" is not in the vocabulary");
  }
  out.push_back(id);
}

std::unique_ptr<Model> MakeWordLevel(const JsonRef& j) {
  return std::make_unique<WordLevel>(Vocab::FromJson(j.At("vocab")),
                                     j.GetString("unk_token", "<unk>"));
}

}  // namespace ebb::tok
