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
// Slot       (a DecodeBatcher row): a shared past/present buffer in memory the batcher maps;
//              the cache only charges the pool for its tokens.
// One variant per file: kv_cache_shared.h, kv_cache_pingpong.h, kv_cache_slot.h; this header is
// their interface and the factory that picks one (KvCache::Create, KvCache::CreateSlot).
// Failure: Reserve() allocates before changing anything, so a refused growth (ResourceExhausted)
// leaves the cache as it was. Not thread-safe: owned by one generator.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <functional>
#include <memory>
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
  // `shared`: use one buffer for past and present (graph must support it: GQA), else
  // ping-pong. Static mode allocates now and may throw ResourceExhausted. A device pool
  // (KvPool::device()) gets a KvCacheDevice (kv_cache_device.h): static only, so dynamic mode
  // there throws InvalidArgument naming the fix.
  static std::unique_ptr<KvCache> Create(KvPool& pool, const KvShape& shape, bool shared,
                                         KvMode mode, int max_length, int chunk_tokens);
  // Slot mode: a shared past/present buffer in a row that another owner maps (not in the pool);
  // `slot` returns where the row is now, called by BindStep (the owner keeps it valid and at
  // least as wide as the step). Reserve() charges the pool for the tokens (static: max_length
  // now; dynamic: in chunks) as the other modes allocate them, with the same errors.
  static std::unique_ptr<KvCache> CreateSlot(KvPool& pool, const KvShape& shape, KvMode mode,
                                             int max_length, int chunk_tokens,
                                             std::function<KvSlotView()> slot);
  virtual ~KvCache() = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Makes room for a step that ends with `total_tokens` in the widest row.
  virtual void Reserve(int total_tokens) = 0;

  // Appends the past inputs and present outputs of a step from width `past` to `past + new_tokens`
  // (Reserve(past + new_tokens) first). Tensors view ebb's buffers; the vectors receive them in
  // layer order (names are the caller's).
  virtual void BindStep(int past, int new_tokens, const Ort::MemoryInfo& mem,
                        std::vector<Ort::Value>& past_values,
                        std::vector<Ort::Value>& present_values) = 0;
  // After a successful Run: the present becomes the past.
  virtual void CommitStep() {}
  // Before the `steps` Run()s of one request (the chunks of a prefill), from a committed past of
  // `width` tokens. A ping-pong step writes into the buffer that held the past two steps earlier,
  // so when several steps follow a non-empty past this keeps a copy of that past (from the pool,
  // counted in its budget; may throw ResourceExhausted, changing nothing). Otherwise it does
  // nothing: a shared buffer is only written beyond the rows' committed lengths.
  virtual void BeginSteps(int /*width*/, int /*steps*/) {}
  // Rolls back the `steps` CommitStep()s since BeginSteps after a later step failed, restoring
  // the committed past; the cache is then as before BeginSteps (its buffers may be larger).
  virtual void UndoSteps(int /*steps*/) {}
  // The request's steps all succeeded: drops the copy.
  virtual void EndSteps() {}

  // Keeps the first `new_width` tokens of every row (requires new_width <= width). Buffers stay.
  // A shared buffer needs nothing: its rows are read up to their lengths (seqlens_k). Returns
  // the tokens kept: new_width, or fewer where the layout cannot keep them (a device ping-pong
  // cache keeps 0); the caller feeds the rest again.
  virtual int Rewind(int /*width*/, int new_width) { return new_width; }

  // Bytes held from (or charged to) the pool.
  virtual uint64_t bytes() const = 0;

  // Copies of positions for the prefix cache (kv/prefix_cache.h), in its compact layout:
  // [tensor (layer-major, K then V)][head][n][head_size]. `width` is the committed past's width
  // (the generator's KV columns); `row` a batch row. Read: positions [start, start + n) of a
  // committed past. Write: the same positions of a past of `width` tokens that the next step
  // will read (Reserve(width) first; on an empty cache, as the first thing). A slot cache is
  // read and written under its batcher's engine lock, after EnsureColumns(width).
  void ReadPositions(int width, int row, int start, int n, char* dst);
  void WritePositions(int width, int row, int start, int n, const char* src);

 protected:
  KvCache(KvPool& pool, const KvShape& shape, KvMode mode, int max_length, int chunk_tokens);
  // Where position 0 of (tensor, row, head) is in a past of `width` tokens; its positions follow
  // head_size elements apart. WritePositions calls it with for_write (a static shared buffer then
  // lays itself out at least `width` wide).
  virtual char* PositionZero(int width, int tensor, int row, int head, bool for_write) = 0;
  // Bytes of a buffer of `tokens` tokens; throws ResourceExhausted on a 64-bit overflow.
  uint64_t BytesFor(int tokens) const;
  // The capacity to grow to from `current` tokens for a step of `tokens`: max_length in static
  // mode; in dynamic mode by at least half of `current`, in chunks of chunk_tokens.
  int RoundUp(int tokens, int current) const;
  // Per layer, per K/V (or combined), the tensors for a buffer of `cap` tokens with `seq` used.
  void AppendViews(void* base, int cap, int seq, const Ort::MemoryInfo& mem,
                   std::vector<Ort::Value>& out) const;

  KvPool& pool_;  // non-owning: the model's pool outlives its caches
  KvShape shape_;
  KvMode mode_;
  int max_length_;
  int chunk_tokens_;
};

}  // namespace ebb::internal
