// KvCache — one generator's KV cache, in memory from the model's KvPool, bound into ORT so that
// ORT writes the present tensors straight into ebb's buffers.
//
// Layouts (per layer; K then V, or one combined [2, ...] tensor for gpt2-style graphs):
//   shared     (GQA graphs, static mode or dynamic with growth): past and present are the SAME
//              buffer of `capacity` tokens, [B, H, capacity, D]; ORT appends in place.
//   ping-pong  (graphs that concatenate): past is [B, H, P, D] in one buffer, ORT writes present
//              [B, H, P+S, D] into the other; buffers swap after each step.
// Static mode reserves max_length at construction (mmap'd lazily: pages become resident as
// tokens are written). Dynamic mode grows in chunks of `chunk_tokens`, and by at least half the
// current capacity, so the copies stay linear in the final size: a shared buffer is copied into a
// larger one; a ping-pong target buffer is simply reallocated larger (ORT fills it).
// Failure: Reserve() allocates before changing anything, so a refused growth (ResourceExhausted)
// leaves the cache as it was. Not thread-safe: owned by one generator.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ebb/options.h"
#include "kv/kv_pool.h"

namespace ebb::internal {

struct KvShape {
  int num_layers = 0;
  int kv_heads = 0;
  int head_size = 0;
  int batch = 1;
  bool combined = false;  // [2, B, H, S, D] per layer instead of K and V tensors
  ONNXTensorElementDataType elem_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  size_t elem_bytes = 4;

  // Bytes of one token of one sequence, all layers, K and V.
  uint64_t BytesPerToken() const { return 2ull * num_layers * kv_heads * head_size * elem_bytes; }
};

class KvCache {
 public:
  // `shared`: use one buffer for past and present (graph must support it: GQA). Static mode
  // allocates now and may throw ResourceExhausted.
  KvCache(KvPool& pool, const KvShape& shape, bool shared, KvMode mode, int max_length,
          int chunk_tokens);
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Makes room for a step that ends with `total_tokens` in the widest row.
  void Reserve(int total_tokens);

  // Appends the past inputs and present outputs of a step from width `past` to `past + new_tokens`
  // (Reserve(past + new_tokens) first). Tensors view ebb's buffers; the vectors receive them in
  // layer order (names are the caller's).
  void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                std::vector<Ort::Value>& past_values, std::vector<Ort::Value>& present_values);
  // After a successful Run: the present becomes the past.
  void CommitStep();
  // Rolls back the last `steps` CommitStep()s after a later step of the same request failed.
  // Valid because a ping-pong step never overwrites its past, and a shared buffer is only
  // written beyond the rows' committed lengths.
  void UndoSteps(int steps);

  // Keeps the first `new_width` tokens of every row (requires new_width <= width). Buffers stay.
  void Rewind(int width, int new_width);

  uint64_t bytes() const { return a_.bytes() + b_.bytes(); }

 private:
  // Bytes of a buffer of `tokens` tokens; throws ResourceExhausted on a 64-bit overflow.
  uint64_t BytesFor(int tokens) const;
  int RoundUp(int tokens) const;
  // Per layer, per K/V (or combined), the tensors for a buffer of `cap` tokens with `seq` used.
  void AppendViews(void* base, int cap, int seq, const Ort::MemoryInfo& mem,
                   std::vector<Ort::Value>& out) const;

  KvPool& pool_;
  KvShape shape_;
  bool shared_;
  KvMode mode_;
  int max_length_;
  int chunk_tokens_;
  // shared: a_ only. ping-pong: a_ holds the past, b_ receives the present.
  KvBlock a_, b_;
  int cap_a_ = 0, cap_b_ = 0;
};

}  // namespace ebb::internal
