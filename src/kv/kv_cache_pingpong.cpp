#include "kv/kv_cache_pingpong.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ebb::internal {

KvCachePingPong::KvCachePingPong(KvPool& pool, const KvShape& shape, KvMode mode, int max_length,
                                 int chunk_tokens)
    : KvCache(pool, shape, mode, max_length, chunk_tokens) {
  if (mode_ == KvMode::kStatic) Reserve(max_length_);
}

void KvCachePingPong::Reserve(int total_tokens) {
  // Both buffers get room for `total_tokens` so that a multi-chunk prefill never reallocates
  // between Run()s. Allocate everything first, then swap in.
  const int cap = RoundUp(total_tokens, std::max(cap_a_, cap_b_));
  KvBlock new_b, new_a;
  if (total_tokens > cap_b_) new_b = pool_.Allocate(BytesFor(cap), "KV cache");
  if (total_tokens > cap_a_) new_a = pool_.Allocate(BytesFor(cap), "KV cache");
  if (new_a) {
    if (a_) {
      CopyPast(static_cast<const char*>(a_.data()), cap_a_, static_cast<char*>(new_a.data()), cap,
               cap_a_);
    }
    a_ = std::move(new_a);
    cap_a_ = cap;
  }
  if (new_b) {
    b_ = std::move(new_b);
    cap_b_ = cap;
  }
}

void KvCachePingPong::BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                               std::vector<Ort::Value>& past_values,
                               std::vector<Ort::Value>& present_values) {
  AppendViews(a_ ? a_.data() : nullptr, cap_a_, past, mem, past_values);
  AppendViews(b_.data(), cap_b_, past + new_tokens, mem, present_values);
}

void KvCachePingPong::CommitStep() {
  std::swap(a_, b_);
  std::swap(cap_a_, cap_b_);
  // Dynamic mode: the old past buffer may be narrower than the next present; Reserve() replaces
  // it when needed.
}

void KvCachePingPong::CopyPast(const char* src, int src_cap, char* dst, int dst_cap,
                               int width) const {
  // Tensors are compact inside their slot, but slots are `capacity`-strided: copy per tensor.
  // A combined [2, B, H, S, D] tensor is compact across its layer's two slots.
  const int units = shape_.combined ? shape_.num_layers : 2 * shape_.num_layers;
  const uint64_t src_slot = BytesFor(src_cap) / units;
  const uint64_t dst_slot = BytesFor(dst_cap) / units;
  const uint64_t used = BytesFor(width) / units;
  for (int i = 0; i < units; ++i) std::memcpy(dst + i * dst_slot, src + i * src_slot, used);
}

void KvCachePingPong::BeginSteps(int width, int steps) {
  saved_.Reset();
  if (width <= 0 || steps < 2 || !a_) return;
  KvBlock copy = pool_.Allocate(BytesFor(width), "KV cache (prefill rollback copy)");  // may throw
  CopyPast(static_cast<const char*>(a_.data()), cap_a_, static_cast<char*>(copy.data()), width,
           width);
  saved_ = std::move(copy);
  saved_width_ = width;
}

void KvCachePingPong::UndoSteps(int steps) {
  if (steps % 2 == 1) {
    std::swap(a_, b_);
    std::swap(cap_a_, cap_b_);
  }
  // A second step (even one that failed part way) may have written over the committed past.
  if (saved_ && steps >= 1) {
    CopyPast(static_cast<const char*>(saved_.data()), saved_width_, static_cast<char*>(a_.data()),
             cap_a_, saved_width_);
  }
  saved_.Reset();
}

int KvCachePingPong::Rewind(int width, int new_width) {
  if (new_width >= width || !a_) return new_width;
  // Compact each row from stride `width` to stride `new_width` (forward, so in place is safe).
  const size_t d_bytes = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;
  const size_t rows_per_tensor =
      static_cast<size_t>(shape_.batch) * shape_.kv_heads * (shape_.combined ? 2 : 1);
  const size_t slot_bytes = static_cast<size_t>(shape_.batch) * shape_.kv_heads * cap_a_ * d_bytes;
  const int tensors_per_layer = shape_.combined ? 1 : 2;
  for (int l = 0; l < shape_.num_layers; ++l) {
    for (int t = 0; t < tensors_per_layer; ++t) {
      char* base = static_cast<char*>(a_.data()) + (2 * l + t) * slot_bytes;
      for (size_t r = 0; r < rows_per_tensor; ++r) {
        std::memmove(base + r * new_width * d_bytes, base + r * width * d_bytes,
                     new_width * d_bytes);
      }
    }
  }
  return new_width;
}

char* KvCachePingPong::PositionZero(int width, int tensor, int row, int head, bool /*for_write*/) {
  // The past is in a_: per tensor a compact [B, H, width, D] at its capacity-strided slot; a
  // combined layer is one compact [2, B, H, width, D] over its two slots.
  const size_t d = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;
  const size_t heads = static_cast<size_t>(shape_.batch) * shape_.kv_heads;
  const size_t slot = heads * static_cast<size_t>(cap_a_) * d;
  const size_t tensor_bytes = heads * static_cast<size_t>(width) * d;
  const size_t layer = static_cast<size_t>(tensor / 2), kv = static_cast<size_t>(tensor % 2);
  const size_t base =
      shape_.combined ? 2 * layer * slot + kv * tensor_bytes : static_cast<size_t>(tensor) * slot;
  return static_cast<char*>(a_.data()) + base +
         (static_cast<size_t>(row) * shape_.kv_heads + head) * static_cast<size_t>(width) * d;
}

}  // namespace ebb::internal
