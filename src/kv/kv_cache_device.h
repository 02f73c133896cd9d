// KvCacheDevice — a generator's KV cache on an accelerator (kv_cache.h): the pool is a device
// pool (KvPool::device()), and every KV tensor is one whole device allocation, because a WebGPU
// buffer is a handle that takes no offset (a host cache packs all layers in one block).
// Layouts, as on the host:
//   shared     (GQA with search.past_present_share_buffer): past and present are the same
//              [B, H, max_length, D] buffer per layer and K/V; ORT appends in place. This is the
//              static layout WebGPU graph capture needs.
//   ping-pong  (graphs that concatenate, GQA without a shared buffer): past [B, H, P, D] views
//              one set of buffers, ORT writes present [B, H, P+S, D] into the other; they swap.
// Sizing is static: max_length is allocated at construction (ResourceExhausted from the device
// budget or the device, changing nothing). A device buffer cannot be grown in place or restrided
// without a device copy that ORT's API does not offer for an offset, so kv_cache.mode=dynamic is
// refused on a device at load and per request (generator.cpp).
// The step loop never copies KV through the host. A multi-step prefill after a non-empty past
// on a ping-pong cache writes its steps into a third set so that the committed past survives a
// failed step (BeginSteps; the set is charged to the budgets like any KV). Rewind on a ping-pong
// cache keeps nothing (returns 0): the generator feeds the kept tokens again.
// Not thread-safe: owned by one generator.
#pragma once

#include <vector>

#include "kv/kv_cache.h"

namespace ebb::internal {

// Why kv_cache.mode=dynamic is refused with the KV on `device` ("webgpu:0"), and the fix: the one
// message of the load-time and the per-request refusal.
std::string DynamicModeOnDeviceMessage(const std::string& device);

class KvCacheDevice final : public KvCache {
 public:
  // Allocates max_length now; may throw ResourceExhausted.
  KvCacheDevice(KvPool& pool, const KvShape& shape, bool shared, int max_length);

  void Reserve(int total_tokens) override;
  void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                std::vector<Ort::Value>& past_values,
                std::vector<Ort::Value>& present_values) override;
  void CommitStep() override;
  void BeginSteps(int width, int steps) override;
  void UndoSteps(int steps) override;
  void EndSteps() override;
  int Rewind(int width, int new_width) override;
  uint64_t bytes() const override;

 protected:
  char* PositionZero(int width, int tensor, int row, int head, bool for_write) override;

 private:
  using Set = std::vector<KvBlock>;  // one block per tensor: per layer K, V (or one combined)
  Set AllocateSet(const char* what);
  // Views of `set`'s tensors `seq` tokens wide, with the device's memory info.
  void AppendSet(const Set& set, int seq, std::vector<Ort::Value>& out) const;

  bool shared_;
  Set a_, b_;  // a_ holds the past; b_ receives the present (ping-pong only)
  Set spare_;  // BeginSteps' third set (ping-pong)
  Set saved_;  // the committed past while a multi-step prefill runs (ping-pong)
  bool protecting_ = false;
  int commits_ = 0;
};

}  // namespace ebb::internal
