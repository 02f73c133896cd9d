// Added tokens (tokenizer.json "added_tokens"): special and user-added tokens that are split
// out of the text before the model runs, with the reference's rules:
//   * tokens with normalized=false match the raw input; normalized=true ones match the text
//     after normalization (their content is normalized the same way first);
//   * leftmost-longest matching, non-overlapping, left to right;
//   * single_word: only when not preceded/followed by a word character (\w);
//   * lstrip / rstrip: the token absorbs the whitespace on its left / right.
// Ids are assigned as the reference does (existing vocabulary id, else the next free id).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/flat_map.h"
#include "tokenizer/json_ref.h"

namespace ebb::tok {

class Model;
class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool single_word = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // Reads the "added_tokens" array (may be null). `normalizer` may be null.
  AddedVocabulary(const JsonRef& j, const Model& model, const Normalizer* normalizer);

  // A piece of a split: an added token (id >= 0) or a text gap [begin, end).
  struct Split {
    int32_t id;
    size_t begin, end;
  };
  // Splits `text` on the raw (normalized=false) or normalized tokens. Appends to `out`,
  // covering the text; gaps may be empty.
  void SplitRaw(std::string_view text, std::vector<Split>& out) const {
    FindMatches(text, raw_, out);
  }
  void SplitNormalized(std::string_view text, std::vector<Split>& out) const {
    FindMatches(text, normalized_, out);
  }
  bool HasRaw() const { return !raw_.nodes.empty(); }
  bool HasNormalized() const { return !normalized_.nodes.empty(); }

  const AddedToken* ById(int32_t id) const;
  int32_t Find(std::string_view content) const { return by_content_.Find(content); }
  // Whether `content` is the content of a special token (the reference skips by content).
  bool IsSpecialContent(std::string_view content) const {
    return special_contents_.Find(content) >= 0;
  }
  int32_t MaxId() const { return max_id_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Byte trie with leftmost-longest search.
  struct Trie {
    struct Node {
      int32_t token = -1;  // index into tokens_, or -1
    };
    std::vector<Node> nodes;  // nodes[0] is the root when non-empty
    PairMap edges;            // (node, byte) -> child node (in Value::id)
    bool first_byte[256] = {};
    void Insert(std::string_view key, int32_t token);
  };

  void FindMatches(std::string_view s, const Trie& trie, std::vector<Split>& out) const;

  std::vector<AddedToken> tokens_;  // unique contents, in order of appearance
  std::unordered_map<int32_t, size_t> by_id_;
  StringIdMap by_content_;
  StringIdMap special_contents_;
  Trie raw_, normalized_;
  int32_t max_id_ = -1;
};

}  // namespace ebb::tok
