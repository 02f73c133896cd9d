#include "kv/kv_cache_slot.h"

#include <utility>

#include "ebb/error.h"

namespace ebb::internal {

KvCacheSlot::KvCacheSlot(KvPool& pool, const KvShape& shape, KvMode mode, int max_length,
                         int chunk_tokens, std::function<KvSlotView()> slot)
    : KvCache(pool, shape, mode, max_length, chunk_tokens), slot_(std::move(slot)) {
  if (!slot_ || shape_.batch != 1 || shape_.combined) {
    throw Error(ErrorCode::Internal, "KV slot view does not fit the cache (a bug in ebb)");
  }
  if (mode_ == KvMode::kStatic) Reserve(max_length_);
}

void KvCacheSlot::Reserve(int total_tokens) {
  if (total_tokens <= cap_) return;
  const int cap = RoundUp(total_tokens, cap_);
  // The new charge is taken before the old one is returned: a refusal changes nothing.
  charge_ = pool_.Charge(BytesFor(cap), "KV cache");
  cap_ = cap;
}

void KvCacheSlot::BindStep(int /*past*/, int /*new_tokens*/, const Ort::MemoryInfo& mem,
                           std::vector<Ort::Value>& past_values,
                           std::vector<Ort::Value>& present_values) {
  const KvSlotView view = slot_();
  AppendSlotViews(view, 1, shape_, mem, past_values);
  AppendSlotViews(view, 1, shape_, mem, present_values);
}

char* KvCacheSlot::PositionZero(int /*width*/, int tensor, int /*row*/, int head,
                                bool /*for_write*/) {
  // The row's tensor i is [1, H, stride_tokens, D] at base + i * tensor_stride_bytes (engine
  // lock held by the caller, so the row does not move).
  const KvSlotView view = slot_();
  const size_t d = static_cast<size_t>(shape_.head_size) * shape_.elem_bytes;
  return view.base + static_cast<size_t>(tensor) * view.tensor_stride_bytes +
         static_cast<size_t>(head) * static_cast<size_t>(view.stride_tokens) * d;
}

}  // namespace ebb::internal
