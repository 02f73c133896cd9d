#include "tokenizer/model.h"

#include "tokenizer/bpe.h"
#include "tokenizer/wordlevel.h"
#include "tokenizer/wordpiece.h"

namespace ebb::tok {

Vocab Vocab::FromJson(const JsonRef& j) {
  if (!j.IsObject()) j.Fail("expected an object of token -> id");
  Vocab v;
  v.map_.Reserve(j.Size());
  size_t total = 0;
  int64_t max_id = -1;
  for (const auto& [key, value] : j.node().items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      j.At(key).Fail("expected a non-negative integer id");
    }
    if (value.get<int64_t>() > kMaxTokenId) {
      j.At(key).Fail("id " + std::to_string(value.get<int64_t>()) + " is above ebb's limit of " +
                     std::to_string(kMaxTokenId) + " (16M - 1)");
    }
    max_id = std::max<int64_t>(max_id, value.get<int64_t>());
    total += key.size();
  }
  v.offsets_.assign(static_cast<size_t>(max_id + 1), Entry{});
  v.arena_.reserve(total);
  for (const auto& [key, value] : j.node().items()) {
    const auto id = static_cast<int32_t>(value.get<int64_t>());
    v.map_.Insert(key, id);
    v.offsets_[id] =
        Entry{static_cast<uint32_t>(v.arena_.size()), static_cast<uint32_t>(key.size())};
    v.arena_.append(key);
  }
  return v;
}

std::unique_ptr<Model> MakeModel(const JsonRef& j) {
  std::string type;
  if (j.Has("type")) {
    type = j.Type();
  } else if (j.Has("merges")) {  // very old files omit the type
    type = "BPE";
  } else {
    j.Fail("missing model type");
  }
  if (type == "BPE") return MakeBpe(j);
  if (type == "WordPiece") return MakeWordPiece(j);
  if (type == "WordLevel") return MakeWordLevel(j);
  j.At("type").Fail("unsupported model \"" + type + "\"");
}

}  // namespace ebb::tok
