// constrain/token_trie.h — a model's vocabulary as a byte trie, for computing token masks.
//
// Each token id stands for the bytes it adds to the text mid-sequence (tokenizer/token_bytes.h
// computes them: byte-level BPE tokens and SentencePiece byte-fallback tokens may hold part of
// a UTF-8 character). Tokens with no bytes (special and control tokens) are never allowed by a
// grammar; EOS is allowed separately, where the grammar accepts.
//
// The trie is stored in preorder: node i holds one byte, its depth, the end of its subtree and
// the token ids whose bytes end there. Walking it in order with one matcher state per depth
// visits each shared prefix once; a refused node skips its whole subtree.
//
// Ownership: immutable after construction; shared (shared_ptr) by a model's compiled
// constraints. Thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ebb::constrain {

class TokenTrie {
 public:
  // token_bytes[id]: the bytes of token `id` (for a special token, its text: a lazy
  // constraint's trigger may be one). `excluded[id]` (empty: none): tokens a grammar never
  // allows (special and control tokens); tokens with no bytes are excluded too.
  explicit TokenTrie(std::vector<std::string> token_bytes, std::vector<bool> excluded = {});
  bool excluded(int32_t id) const {
    return bytes_[static_cast<size_t>(id)].empty() ||
           (static_cast<size_t>(id) < excluded_.size() && excluded_[static_cast<size_t>(id)]);
  }

  size_t vocab_size() const { return bytes_.size(); }
  const std::string& token_bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  // Preorder nodes.
  size_t num_nodes() const { return node_byte_.size(); }
  uint8_t node_byte(size_t i) const { return node_byte_[i]; }
  int32_t node_depth(size_t i) const { return node_depth_[i]; }   // 1 for a first byte
  size_t subtree_end(size_t i) const { return subtree_end_[i]; }  // one past the last descendant
  // Token ids ending at node i: token_ids()[tokens_begin(i) .. tokens_begin(i + 1)).
  uint32_t tokens_begin(size_t i) const { return tokens_begin_[i]; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  int32_t max_depth() const { return max_depth_; }

  // Walks the trie along `bytes` and returns the longest token that is a prefix of them
  // (-1 when none), preferring, among tokens of equal bytes, the lowest id.
  int32_t LongestPrefixToken(std::string_view bytes) const;

  size_t MemoryBytes() const;

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> excluded_;
  std::vector<uint8_t> node_byte_;
  std::vector<int32_t> node_depth_;
  std::vector<uint32_t> subtree_end_;
  std::vector<uint32_t> tokens_begin_;  // num_nodes + 1 entries
  std::vector<int32_t> token_ids_;
  int32_t max_depth_ = 0;
};

}  // namespace ebb::constrain
