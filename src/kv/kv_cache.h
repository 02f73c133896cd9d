// KvCache — one generator's KV cache, in memory from the model's KvPool, bound into ORT so that
// ORT writes the present tensors straight into ebb's buffers.
//
// Layouts (per layer; K then V, or one combined [2, ...] tensor for gpt2-style graphs):
//   shared     (GQA graphs with search.past_present_share_buffer, static mode or dynamic with
//              growth): past and present are the SAME buffer of `capacity` tokens,
//              [B, H, capacity, D]; ORT appends in place.
//   ping-pong  (graphs that concatenate, and GQA graphs without a shared buffer): past is
//              [B, H, P, D] in one buffer, ORT writes present [B, H, P+S, D] into the other
//              (GQA: as wide as the attention mask); buffers swap after each step.
// Static mode reserves max_length at construction (mmap'd lazily: pages become resident as
// tokens are written). A shared buffer in static mode is laid out, and bound, only as wide as
// the steps so far need (rounded up to 64 tokens, re-laid in place 1.5x wider when a step needs
// more): ORT's CPU GroupQueryAttention works over the whole width it is given, so a 2048-token
// binding made a 128-token decode about 3x slower than a 160-token one. The memory reserved
// (and charged) is still max_length's. Dynamic mode grows in chunks of `chunk_tokens`, and by at
// least half the current capacity, so the copies stay linear in the final size: a shared buffer is
// copied into a larger one; a ping-pong target buffer is simply reallocated larger (ORT fills it).
// Failure: Reserve() allocates before changing anything, so a refused growth (ResourceExhausted)
// leaves the cache as it was. Not thread-safe: owned by one generator.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ebb/options.h"
#include "kv/kv_pool.h"
#include "kv/kv_shape.h"

namespace ebb::internal {

// Where a DecodeBatcher row keeps a cache (slot mode): tensor i of the row (layer-major, K then
// V) starts at base + i * tensor_stride_bytes and is [1, H, stride_tokens, D]. The memory is the
// batcher's; the cache only charges its pool for the tokens it reserves.
struct KvSlotView {
  char* base = nullptr;
  uint64_t tensor_stride_bytes = 0;
  int stride_tokens = 0;
};

// Appends, per layer K then V, `rows` consecutive rows of a slot region starting at view.base:
// [rows, H, stride_tokens, D] tensors (past and present alike: the buffer is shared).
void AppendSlotViews(const KvSlotView& view, int rows, const KvShape& shape,
                     const Ort::MemoryInfo& mem, std::vector<Ort::Value>& out);

class KvCache {
 public:
  // `shared`: use one buffer for past and present (graph must support it: GQA). Static mode
  // allocates now and may throw ResourceExhausted.
  KvCache(KvPool& pool, const KvShape& shape, bool shared, KvMode mode, int max_length,
          int chunk_tokens);
  // Slot mode: a shared past/present buffer in a row that another owner maps (not in the pool);
  // `slot` returns where the row is now, called by BindStep (the owner keeps it valid and at
  // least as wide as the step). Reserve() charges the pool for the tokens (static: max_length
  // now; dynamic: in chunks) as the other modes allocate them, with the same errors.
  KvCache(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens,
          std::function<KvSlotView()> slot);
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
  // Before the `steps` Run()s of one request (the chunks of a prefill), from a committed past of
  // `width` tokens. A ping-pong step writes into the buffer that held the past two steps earlier,
  // so when several steps follow a non-empty past this keeps a copy of that past (from the pool,
  // counted in its budget; may throw ResourceExhausted, changing nothing). Otherwise it does
  // nothing: a shared buffer is only written beyond the rows' committed lengths.
  void BeginSteps(int width, int steps);
  // Rolls back the `steps` CommitStep()s since BeginSteps after a later step failed, restoring
  // the committed past; the cache is then as before BeginSteps (its buffers may be larger).
  void UndoSteps(int steps);
  // The request's steps all succeeded: drops the copy.
  void EndSteps() { saved_.Reset(); }

  // Keeps the first `new_width` tokens of every row (requires new_width <= width). Buffers stay.
  void Rewind(int width, int new_width);

  uint64_t bytes() const { return a_.bytes() + b_.bytes() + saved_.bytes() + charge_.bytes(); }

 private:
  // Bytes of a buffer of `tokens` tokens; throws ResourceExhausted on a 64-bit overflow.
  uint64_t BytesFor(int tokens) const;
  int RoundUp(int tokens) const;
  // Ping-pong: copies the first `width` tokens of each tensor between a buffer of `cap` tokens
  // (tensors at `cap`-strided slots) and a compact one.
  void CopyPast(const char* src, int src_cap, char* dst, int dst_cap, int width) const;
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
  // Shared static mode: the tokens per row of the current layout (<= cap_a_); see the top.
  int width_ = 0;
  // Shared static mode: widens the layout to at least `tokens` (in place; no allocation).
  void EnsureWidth(int tokens);
  // BeginSteps' copy of the committed past, compact ([.., saved_width_, ..] per tensor).
  KvBlock saved_;
  int saved_width_ = 0;
  // Slot mode (slot_ set): the charge for cap_a_ tokens; a_ and b_ stay empty.
  std::function<KvSlotView()> slot_;
  KvCharge charge_;
};

}  // namespace ebb::internal
