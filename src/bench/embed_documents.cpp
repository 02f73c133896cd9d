#include "bench/embed_documents.h"

#include <algorithm>
#include <utility>

#include "bench/prompts.h"

namespace ebb::bench {
namespace {

// splitmix64: a fixed mix, the same on every platform and in every process.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

EmbedDocuments::EmbedDocuments(int32_t vocab_size, std::vector<int32_t> special_ids, int32_t cls_id,
                               int32_t sep_id, int32_t max_tokens, uint64_t seed)
    : vocab_size_(vocab_size),
      special_ids_(std::move(special_ids)),
      cls_id_(cls_id),
      sep_id_(sep_id),
      max_tokens_(std::max(1, max_tokens)),
      seed_(seed) {}

int32_t EmbedDocuments::Length(int32_t index, int32_t position) const {
  const uint64_t h = Mix(Mix(seed_ ^ static_cast<uint64_t>(index)) +
                         static_cast<uint64_t>(position) * 0x632BE59BD9B4E019ull);
  const uint64_t kind = h % 100, r = h >> 8;
  int64_t lo = 8, hi = 32;  // short
  if (kind >= 85) {
    lo = 129;
    hi = max_tokens_;  // long: up to the model's limit
  } else if (kind >= 50) {
    lo = 33;
    hi = 128;
  }
  hi = std::max(lo, hi);
  const int64_t len = lo + static_cast<int64_t>(r % static_cast<uint64_t>(hi - lo + 1));
  return static_cast<int32_t>(std::clamp<int64_t>(len, std::min(3, max_tokens_), max_tokens_));
}

std::vector<std::vector<int32_t>> EmbedDocuments::Rows(int32_t index, int32_t count) const {
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(static_cast<size_t>(std::max(0, count)));
  for (int32_t j = 0; j < count; ++j) {
    const int32_t len = Length(index, j);
    const int32_t specials = (cls_id_ >= 0) + (sep_id_ >= 0);
    const int32_t body_len = std::max(len > specials ? len - specials : len, 1);
    const int32_t salt = static_cast<int32_t>(
        Mix(seed_ + static_cast<uint64_t>(index) * 7919 + static_cast<uint64_t>(j)) %
        static_cast<uint64_t>(std::max(1, vocab_size_)));
    std::vector<int32_t> row;
    row.reserve(static_cast<size_t>(len));
    if (cls_id_ >= 0 && len > specials) row.push_back(cls_id_);
    const auto body = PromptSet::Synthesize(body_len, vocab_size_, special_ids_, salt);
    row.insert(row.end(), body.begin(), body.end());
    if (sep_id_ >= 0 && len > specials) row.push_back(sep_id_);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ebb::bench
