#include "kv/kv_cache_shared.h"

#include <algorithm>
#include <cstring>

namespace ebb::internal {

KvCacheShared::KvCacheShared(KvPool& pool, const KvShape& shape, KvMode mode, int max_length,
                             int chunk_tokens)
    : KvCache(pool, shape, mode, max_length, chunk_tokens) {
  if (mode_ == KvMode::kStatic) Reserve(max_length_);
}

void KvCacheShared::Reserve(int total_tokens) {
  if (total_tokens <= cap_) return;
  const int cap = RoundUp(total_tokens, cap_);
  KvBlock bigger = pool_.Allocate(BytesFor(cap), "KV cache");  // may throw; nothing changed
  if (buf_) {
    // Copy each [layer, k/v, b, h] row of cap_ tokens to its place in the wider buffer.
    const size_t row_old = static_cast<size_t>(cap_) * shape_.head_size * shape_.elem_bytes;
    const size_t row_new = static_cast<size_t>(cap) * shape_.head_size * shape_.elem_bytes;
    const size_t rows = static_cast<size_t>(shape_.num_layers) * 2 * shape_.batch * shape_.kv_heads;
    const auto* src = static_cast<const char*>(buf_.data());
    auto* dst = static_cast<char*>(bigger.data());
    for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * row_new, src + r * row_old, row_old);
  }
  buf_ = std::move(bigger);
  cap_ = cap;
}

void KvCacheShared::BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                             std::vector<Ort::Value>& past_values,
                             std::vector<Ort::Value>& present_values) {
  // GQA reads the valid prefix per row (seqlens_k) and appends in place.
  int stride = cap_;
  if (mode_ == KvMode::kStatic) {
    EnsureWidth(past + new_tokens);
    stride = width_;
  }
  AppendViews(buf_.data(), stride, stride, mem, past_values);
  AppendViews(buf_.data(), stride, stride, mem, present_values);
}

void KvCacheShared::EnsureWidth(int tokens) {
  if (tokens <= width_) return;
  constexpr int kRound = 64;
  const int64_t rounded = (static_cast<int64_t>(tokens) + kRound - 1) / kRound * kRound;
  const int64_t grown = static_cast<int64_t>(width_) + width_ / 2;
  const int new_width = static_cast<int>(std::min<int64_t>(cap_, std::max(rounded, grown)));
  if (width_ > 0 && buf_) {
    // Every [layer, k/v, b, h] row moves from stride width_ to new_width. Destinations are at or
    // after their sources, so moving the last row first never overwrites a row not yet moved.
    const size_t row_old = static_cast<size_t>(width_) * shape_.head_size * shape_.elem_bytes;
    const size_t row_new = static_cast<size_t>(new_width) * shape_.head_size * shape_.elem_bytes;
    const size_t rows = static_cast<size_t>(shape_.num_layers) * 2 * shape_.batch * shape_.kv_heads;
    auto* base = static_cast<char*>(buf_.data());
    for (size_t r = rows; r-- > 1;) std::memmove(base + r * row_new, base + r * row_old, row_old);
  }
  width_ = new_width;
}

char* KvCacheShared::PositionZero(int width, int tensor, int row, int head, bool for_write) {
  // [B, H, stride, D] per tensor (a combined [2, B, H, stride, D] tensor is the same bytes).
  if (for_write && mode_ == KvMode::kStatic) EnsureWidth(width);
  const size_t stride = static_cast<size_t>(mode_ == KvMode::kStatic ? width_ : cap_);
  const size_t d = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;
  const size_t rows = static_cast<size_t>(tensor) * shape_.batch + static_cast<size_t>(row);
  return static_cast<char*>(buf_.data()) + (rows * shape_.kv_heads + head) * stride * d;
}

}  // namespace ebb::internal
