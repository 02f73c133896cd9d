#include "kv/kv_cache_device.h"

#include <utility>

#include "ebb/error.h"

namespace ebb::internal {

std::string DynamicModeOnDeviceMessage(const std::string& device) {
  return "kv_cache.mode=dynamic is not available with the KV on " + device +
         ": growing a device buffer needs a device copy at an offset, which ONNX Runtime's API "
         "does not offer; use kv_cache.mode=static (the default), which sizes each cache from "
         "its request's max_length";
}

KvCacheDevice::KvCacheDevice(KvPool& pool, const KvShape& shape, bool shared, int max_length)
    : KvCache(pool, shape, KvMode::kStatic, max_length, max_length), shared_(shared) {
  a_ = AllocateSet("KV cache");
  if (!shared_) b_ = AllocateSet("KV cache");
}

KvCacheDevice::Set KvCacheDevice::AllocateSet(const char* what) {
  const int tensors = shape_.combined ? shape_.num_layers : 2 * shape_.num_layers;
  const uint64_t per_tensor = BytesFor(max_length_) / static_cast<uint64_t>(2 * shape_.num_layers) *
                              (shape_.combined ? 2 : 1);
  Set set;
  set.reserve(static_cast<size_t>(tensors));
  for (int i = 0; i < tensors; ++i) set.push_back(pool_.Allocate(per_tensor, what));  // may throw
  return set;
}

void KvCacheDevice::Reserve(int total_tokens) {
  if (total_tokens > max_length_) {
    throw Error(ErrorCode::InvalidArgument,
                "a step of " + std::to_string(total_tokens) + " tokens does not fit the " +
                    std::to_string(max_length_) +
                    "-token device KV cache; raise the request's max_length");
  }
}

void KvCacheDevice::AppendSet(const Set& set, int seq, std::vector<Ort::Value>& out) const {
  const Ort::MemoryInfo& mem = pool_.device()->memory_info();
  const int64_t B = shape_.batch, H = shape_.kv_heads, D = shape_.head_size;
  for (const KvBlock& block : set) {
    std::vector<int64_t> dims{B, H, seq, D};
    if (shape_.combined) dims.insert(dims.begin(), 2);
    size_t elems = 1;
    for (int64_t d : dims) elems *= static_cast<size_t>(d);
    out.push_back(Ort::Value::CreateTensor(mem, block.data(), elems * shape_.elem_bytes,
                                           dims.data(), dims.size(), shape_.elem_type));
  }
}

void KvCacheDevice::BindStep(int past, int new_tokens, const Ort::MemoryInfo& /*host_mem*/,
                             std::vector<Ort::Value>& past_values,
                             std::vector<Ort::Value>& present_values) {
  Reserve(past + new_tokens);
  if (shared_) {
    // GQA appends in place and reads each row's valid prefix (seqlens_k); the kernel shares the
    // buffer when past and present are the same one (ORT's WebGPU and CUDA GQA alike).
    AppendSet(a_, max_length_, past_values);
    AppendSet(a_, max_length_, present_values);
    return;
  }
  AppendSet(a_, past, past_values);
  AppendSet(b_, past + new_tokens, present_values);
}

void KvCacheDevice::CommitStep() {
  if (shared_) return;
  if (protecting_ && commits_ == 0) {
    // The first step of a protected prefill: keep the committed past aside, write the next
    // steps into the spare set and the one just written.
    saved_ = std::move(a_);
    a_ = std::move(b_);
    b_ = std::move(spare_);
  } else {
    std::swap(a_, b_);
  }
  ++commits_;
}

void KvCacheDevice::BeginSteps(int width, int steps) {
  commits_ = 0;
  protecting_ = false;
  if (shared_ || width <= 0 || steps < 2) return;
  spare_ = AllocateSet("KV cache (prefill rollback set)");  // may throw; nothing changed
  protecting_ = true;
}

void KvCacheDevice::UndoSteps(int steps) {
  if (shared_) return;
  if (protecting_) {
    if (steps >= 1) {
      // a_ holds a later step's output: give it back and take the saved past again.
      spare_ = std::move(a_);
      a_ = std::move(saved_);
    }
    Set().swap(spare_);
    protecting_ = false;
    return;
  }
  if (steps % 2 == 1) std::swap(a_, b_);
}

void KvCacheDevice::EndSteps() {
  Set().swap(saved_);
  Set().swap(spare_);
  protecting_ = false;
}

int KvCacheDevice::Rewind(int width, int new_width) {
  // A shared buffer is read up to each row's length: keeping a prefix needs nothing. A compact
  // ping-pong past would need restriding on the device: keep nothing, the generator re-feeds.
  if (shared_ || new_width >= width) return new_width;
  return 0;
}

uint64_t KvCacheDevice::bytes() const {
  uint64_t b = 0;
  for (const Set* s : {&a_, &b_, &spare_, &saved_}) {
    for (const KvBlock& block : *s) b += block.bytes();
  }
  return b;
}

char* KvCacheDevice::PositionZero(int, int, int, int, bool) {
  throw Error(ErrorCode::FailedPrecondition,
              "the KV cache is on " + pool_.device()->name() +
                  ": its positions cannot be read or written from the host (the prefix cache "
                  "is refused on a device at load)");
}

}  // namespace ebb::internal
