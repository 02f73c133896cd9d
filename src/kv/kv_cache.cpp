#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "ebb/error.h"
#include "kv/kv_cache_device.h"
#include "kv/kv_cache_pingpong.h"
#include "kv/kv_cache_shared.h"
#include "kv/kv_cache_slot.h"

namespace ebb::internal {
namespace {

// Zero-element tensors still need a valid pointer; nothing is ever read from it.
alignas(64) char g_empty[64];

}  // namespace

std::unique_ptr<KvCache> KvCache::Create(KvPool& pool, const KvShape& shape, bool shared,
                                         KvMode mode, int max_length, int chunk_tokens) {
  if (pool.device() != nullptr) {
    if (mode == KvMode::kDynamic) {
      throw Error(ErrorCode::InvalidArgument, DynamicModeOnDeviceMessage(pool.device()->name()));
    }
    return std::make_unique<KvCacheDevice>(pool, shape, shared, max_length);
  }
  if (shared) {
    return std::make_unique<KvCacheShared>(pool, shape, mode, max_length, chunk_tokens);
  }
  return std::make_unique<KvCachePingPong>(pool, shape, mode, max_length, chunk_tokens);
}

std::unique_ptr<KvCache> KvCache::CreateSlot(KvPool& pool, const KvShape& shape, KvMode mode,
                                             int max_length, int chunk_tokens,
                                             std::function<KvSlotView()> slot) {
  return std::make_unique<KvCacheSlot>(pool, shape, mode, max_length, chunk_tokens,
                                       std::move(slot));
}

KvCache::KvCache(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens)
    : pool_(pool),
      shape_(shape),
      mode_(mode),
      max_length_(max_length),
      chunk_tokens_(std::max(1, chunk_tokens)) {}

int KvCache::RoundUp(int tokens, int current_tokens) const {
  if (mode_ == KvMode::kStatic) return max_length_;
  // Grow by at least half the current capacity: fixed 256-token steps made a 4096-token
  // Phi-3.5-sized cache copy ~24 GiB in total (O(n^2)); geometric steps copy < 3x the final size
  // (bench/micro_bench.cpp BM_KvDynamicGrowth).
  // In 64 bits: chunk_tokens may be large (kv_cache.chunk_tokens is bounded, but the
  // constructor takes any int), and rounding up must not wrap.
  const int64_t current = current_tokens;
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

void KvCache::ReadPositions(int width, int row, int start, int n, char* dst) {
  const size_t d = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;  // one position
  const size_t run = d * static_cast<size_t>(n);
  for (int t = 0; t < 2 * shape_.num_layers; ++t) {
    for (int h = 0; h < shape_.kv_heads; ++h) {
      std::memcpy(dst, PositionZero(width, t, row, h, false) + d * static_cast<size_t>(start), run);
      dst += run;
    }
  }
}

void KvCache::WritePositions(int width, int row, int start, int n, const char* src) {
  const size_t d = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;
  const size_t run = d * static_cast<size_t>(n);
  for (int t = 0; t < 2 * shape_.num_layers; ++t) {
    for (int h = 0; h < shape_.kv_heads; ++h) {
      std::memcpy(PositionZero(width, t, row, h, true) + d * static_cast<size_t>(start), src, run);
      src += run;
    }
  }
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

}  // namespace ebb::internal
