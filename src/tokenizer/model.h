// Model: maps one pre-tokenized word to token ids (BPE, WordPiece, WordLevel), plus the
// model's own vocabulary. Also Vocab, the token<->id table the models share.
//
// Thread-safety: immutable after construction (BPE's word cache is internally synchronized);
// all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/flat_map.h"
#include "tokenizer/json_ref.h"

namespace ebb::tok {

// The largest token id ebb accepts in a tokenizer.json (16M - 1). Real vocabularies stay under
// 1M; the id table has one entry per id up to the largest, so an id of 2^31 - 1 would allocate
// 16 GiB.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

class Vocab {
 public:
  // Reads a {"token": id, …} object. Fails (naming the path) on negative or non-integer ids and
  // on ids above kMaxTokenId.
  static Vocab FromJson(const JsonRef& j);

  int32_t Find(std::string_view token) const { return map_.Find(token); }
  // "" when the id has no token.
  std::string_view Token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= offsets_.size() || offsets_[id].len == kNone) {
      return {};
    }
    return std::string_view(arena_.data() + offsets_[id].offset, offsets_[id].len);
  }
  bool HasId(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < offsets_.size() && offsets_[id].len != kNone;
  }
  size_t IdLimit() const { return offsets_.size(); }  // max id + 1
  size_t size() const { return map_.size(); }

 private:
  static constexpr uint32_t kNone = ~0u;
  struct Entry {
    uint32_t offset = 0;
    uint32_t len = kNone;
  };
  StringIdMap map_;
  std::vector<Entry> offsets_;
  std::string arena_;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of `word` (valid UTF-8, non-empty) to `out`. Throws ebb::Error when the
  // model needs an unknown-token id it does not have (as the reference errors).
  virtual void Tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  virtual const Vocab& vocab() const = 0;
};

// Builds the model described by `j` (tokenizer.json's "model"). Throws ebb::Error
// (InvalidArgument) naming the JSON path for unsupported or malformed models.
std::unique_ptr<Model> MakeModel(const JsonRef& j);

}  // namespace ebb::tok
