// The documents of `ebb bench --scenario embed`: token id rows of mixed lengths, synthesized
// deterministically from a seed, so that every run and every process (ebb's and the naive loop's)
// embeds the same texts for the same request. Immutable after construction; thread-safe to read.
//
// Lengths (special tokens included), per document, from a hash of (seed, request, position):
//   half are short (8..32 tokens), 35 % medium (33..128), 15 % long (129..max_tokens),
// each clamped to [min(3, max_tokens), max_tokens]: the spread of a RAG corpus's chunks and
// queries, where padding every text to the longest of its batch costs the most.
// A row is [cls_id] body [sep_id] (either end left out when its id is < 0); the body is
// PromptSet::Synthesize ids, which step over the special ids.
#pragma once

#include <cstdint>
#include <vector>

namespace ebb::bench {

class EmbedDocuments {
 public:
  static constexpr uint64_t kDefaultSeed = 12;

  // `max_tokens`: the model's maximum input length (>= 1). `special_ids` are never used in a
  // body. `cls_id` / `sep_id`: the ids put around each body, or -1 for none.
  EmbedDocuments(int32_t vocab_size, std::vector<int32_t> special_ids, int32_t cls_id,
                 int32_t sep_id, int32_t max_tokens, uint64_t seed = kDefaultSeed);

  // The length of document `position` of request `index`, special tokens included.
  int32_t Length(int32_t index, int32_t position) const;

  // The `count` documents of request `index` (count >= 1), in order.
  std::vector<std::vector<int32_t>> Rows(int32_t index, int32_t count) const;

  int32_t max_tokens() const { return max_tokens_; }

 private:
  int32_t vocab_size_;
  std::vector<int32_t> special_ids_;
  int32_t cls_id_, sep_id_;
  int32_t max_tokens_;
  uint64_t seed_;
};

}  // namespace ebb::bench
