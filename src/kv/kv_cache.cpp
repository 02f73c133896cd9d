#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "ebb/error.h"

namespace ebb::internal {
namespace {

// Zero-element tensors still need a valid pointer; nothing is ever read from it.
alignas(64) char g_empty[64];

}  // namespace

KvCache::KvCache(KvPool& pool, const KvShape& shape, bool shared, KvMode mode, int max_length,
                 int chunk_tokens)
    : pool_(pool),
      shape_(shape),
      shared_(shared),
      mode_(mode),
      max_length_(max_length),
      chunk_tokens_(std::max(1, chunk_tokens)) {
  if (mode_ == KvMode::kStatic) Reserve(max_length_);
}

KvCache::KvCache(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens,
                 std::function<KvSlotView()> slot)
    : pool_(pool),
      shape_(shape),
      shared_(true),
      mode_(mode),
      max_length_(max_length),
      chunk_tokens_(std::max(1, chunk_tokens)),
      slot_(std::move(slot)) {
  if (!slot_ || shape_.batch != 1 || shape_.combined) {
    throw Error(ErrorCode::Internal, "KV slot view does not fit the cache (a bug in ebb)");
  }
  if (mode_ == KvMode::kStatic) Reserve(max_length_);
}

int KvCache::RoundUp(int tokens) const {
  if (mode_ == KvMode::kStatic) return max_length_;
  // Grow by at least half the current capacity: fixed 256-token steps made a 4096-token
  // Phi-3.5-sized cache copy ~24 GiB in total (O(n^2)); geometric steps copy < 3x the final size
  // (bench/micro_bench.cpp BM_KvDynamicGrowth).
  // In 64 bits: chunk_tokens may be large (kv_cache.chunk_tokens is bounded, but the
  // constructor takes any int), and rounding up must not wrap.
  const int64_t current = std::max(cap_a_, cap_b_);
  const int64_t wanted = std::max<int64_t>(tokens, current + current / 2);
  const int64_t rounded = (wanted + chunk_tokens_ - 1) / chunk_tokens_ * chunk_tokens_;
  return static_cast<int>(std::min<int64_t>(rounded, std::max(max_length_, tokens)));
}

uint64_t KvCache::BytesFor(int tokens) const {
  uint64_t bytes = 0;
  const uint64_t rows = static_cast<uint64_t>(std::max(shape_.batch, 0)) *
                        static_cast<uint64_t>(std::max(tokens, 0));  // < 2^62
  if (__builtin_mul_overflow(shape_.BytesPerToken(), rows, &bytes)) {
    throw Error(ErrorCode::ResourceExhausted,
                "a KV cache of " + std::to_string(tokens) + " tokens x batch " +
                    std::to_string(shape_.batch) + " does not fit in 64 bits of bytes");
  }
  return bytes;
}

void KvCache::Reserve(int total_tokens) {
  if (slot_) {
    if (total_tokens <= cap_a_) return;
    const int cap = RoundUp(total_tokens);
    // The new charge is taken before the old one is returned: a refusal changes nothing.
    charge_ = pool_.Charge(BytesFor(cap), "KV cache");
    cap_a_ = cap;
    return;
  }
  if (shared_) {
    if (total_tokens <= cap_a_) return;
    const int cap = RoundUp(total_tokens);
    KvBlock bigger = pool_.Allocate(BytesFor(cap), "KV cache");  // may throw; nothing changed
    if (a_) {
      // Copy each [layer, k/v, b, h] row of cap_a_ tokens to its place in the wider buffer.
      const size_t row_old = static_cast<size_t>(cap_a_) * shape_.head_size * shape_.elem_bytes;
      const size_t row_new = static_cast<size_t>(cap) * shape_.head_size * shape_.elem_bytes;
      const size_t rows =
          static_cast<size_t>(shape_.num_layers) * 2 * shape_.batch * shape_.kv_heads;
      const auto* src = static_cast<const char*>(a_.data());
      auto* dst = static_cast<char*>(bigger.data());
      for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * row_new, src + r * row_old, row_old);
    }
    a_ = std::move(bigger);
    cap_a_ = cap;
    return;
  }
  // Ping-pong: a_ holds the past (compact [.., width, ..], so its layout does not depend on the
  // capacity), b_ receives the present. Both get room for `total_tokens` so that a multi-chunk
  // prefill never reallocates between Run()s. Allocate everything first, then swap in.
  const int cap = RoundUp(total_tokens);
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

void KvCache::AppendViews(void* base, int cap, int seq, const Ort::MemoryInfo& mem,
                          std::vector<Ort::Value>& out) const {
  const int64_t B = shape_.batch, H = shape_.kv_heads, D = shape_.head_size;
  // Each layer occupies 2*B*H*cap*D elements; K then V (or the combined [2,...] tensor).
  const size_t slot_elems = static_cast<size_t>(B * H) * cap * D;
  for (int l = 0; l < shape_.num_layers; ++l) {
    char* layer = base == nullptr
                      ? nullptr
                      : static_cast<char*>(base) + 2 * slot_elems * l * shape_.elem_bytes;
    auto make = [&](char* p, std::vector<int64_t> dims) {
      size_t elems = 1;
      for (int64_t d : dims) elems *= static_cast<size_t>(d);
      if (p == nullptr && elems > 0) {
        throw Error(ErrorCode::Internal, "KV cache bound before Reserve() (a bug in ebb)");
      }
      void* data = elems == 0 ? static_cast<void*>(g_empty) : p;
      out.push_back(Ort::Value::CreateTensor(mem, data, elems * shape_.elem_bytes, dims.data(),
                                             dims.size(), shape_.elem_type));
    };
    if (shape_.combined) {
      make(layer, {2, B, H, seq, D});
    } else {
      make(layer, {B, H, seq, D});
      make(layer == nullptr ? nullptr : layer + slot_elems * shape_.elem_bytes, {B, H, seq, D});
    }
  }
}

void KvCache::BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                       std::vector<Ort::Value>& past_values,
                       std::vector<Ort::Value>& present_values) {
  if (slot_) {
    const KvSlotView view = slot_();
    AppendSlotViews(view, 1, shape_, mem, past_values);
    AppendSlotViews(view, 1, shape_, mem, present_values);
    return;
  }
  if (shared_) {
    // GQA reads the valid prefix per row (seqlens_k) and appends in place.
    int stride = cap_a_;
    if (mode_ == KvMode::kStatic) {
      EnsureWidth(past + new_tokens);
      stride = width_;
    }
    AppendViews(a_.data(), stride, stride, mem, past_values);
    AppendViews(a_.data(), stride, stride, mem, present_values);
  } else {
    AppendViews(a_ ? a_.data() : nullptr, cap_a_, past, mem, past_values);
    AppendViews(b_.data(), cap_b_, past + new_tokens, mem, present_values);
  }
}

void KvCache::EnsureWidth(int tokens) {
  if (tokens <= width_) return;
  constexpr int kRound = 64;
  const int64_t rounded = (static_cast<int64_t>(tokens) + kRound - 1) / kRound * kRound;
  const int64_t grown = static_cast<int64_t>(width_) + width_ / 2;
  const int new_width = static_cast<int>(std::min<int64_t>(cap_a_, std::max(rounded, grown)));
  if (width_ > 0 && a_) {
    // Every [layer, k/v, b, h] row moves from stride width_ to new_width. Destinations are at or
    // after their sources, so moving the last row first never overwrites a row not yet moved.
    const size_t row_old = static_cast<size_t>(width_) * shape_.head_size * shape_.elem_bytes;
    const size_t row_new = static_cast<size_t>(new_width) * shape_.head_size * shape_.elem_bytes;
    const size_t rows = static_cast<size_t>(shape_.num_layers) * 2 * shape_.batch * shape_.kv_heads;
    auto* base = static_cast<char*>(a_.data());
    for (size_t r = rows; r-- > 1;) std::memmove(base + r * row_new, base + r * row_old, row_old);
  }
  width_ = new_width;
}

void AppendSlotViews(const KvSlotView& view, int rows, const KvShape& shape,
                     const Ort::MemoryInfo& mem, std::vector<Ort::Value>& out) {
  const std::vector<int64_t> dims{rows, shape.kv_heads, view.stride_tokens, shape.head_size};
  const size_t bytes = static_cast<size_t>(rows) * shape.kv_heads * view.stride_tokens *
                       shape.head_size * shape.elem_bytes;
  for (int i = 0; i < 2 * shape.num_layers; ++i) {
    out.push_back(Ort::Value::CreateTensor(mem, view.base + i * view.tensor_stride_bytes, bytes,
                                           dims.data(), dims.size(), shape.elem_type));
  }
}

void KvCache::CommitStep() {
  if (shared_) return;
  std::swap(a_, b_);
  std::swap(cap_a_, cap_b_);
  // Dynamic mode: the old past buffer may be narrower than the next present; Reserve() replaces
  // it when needed.
}

void KvCache::CopyPast(const char* src, int src_cap, char* dst, int dst_cap, int width) const {
  // Tensors are compact inside their slot, but slots are `capacity`-strided: copy per tensor.
  // A combined [2, B, H, S, D] tensor is compact across its layer's two slots.
  const int units = shape_.combined ? shape_.num_layers : 2 * shape_.num_layers;
  const uint64_t src_slot = BytesFor(src_cap) / units;
  const uint64_t dst_slot = BytesFor(dst_cap) / units;
  const uint64_t used = BytesFor(width) / units;
  for (int i = 0; i < units; ++i) std::memcpy(dst + i * dst_slot, src + i * src_slot, used);
}

void KvCache::BeginSteps(int width, int steps) {
  saved_.Reset();
  if (shared_ || width <= 0 || steps < 2 || !a_) return;
  KvBlock copy = pool_.Allocate(BytesFor(width), "KV cache (prefill rollback copy)");  // may throw
  CopyPast(static_cast<const char*>(a_.data()), cap_a_, static_cast<char*>(copy.data()), width,
           width);
  saved_ = std::move(copy);
  saved_width_ = width;
}

void KvCache::UndoSteps(int steps) {
  if (!shared_ && steps % 2 == 1) {
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

void KvCache::Rewind(int width, int new_width) {
  if (shared_ || new_width >= width || !a_) return;  // shared: rows are read up to seqlens_k
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
}

}  // namespace ebb::internal
