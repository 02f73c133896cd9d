// The KV region of batched decode (generate/decode_batcher.h): for each of 2 * num_layers
// tensors (layer-major, K then V), `rows` rows of [H, stride, D], in one anonymous mapping that
// becomes resident only as tokens are written. It grows by re-laying the rows wider (Relayout),
// hands a freed row's pages back (ReleaseRow) and says what is resident (ResidentBytes). The
// batcher decides when; this class owns the memory.
// Thread-safety: none; the batcher calls it under its engine lock (every Run() on the region
// and every change of it).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_shape.h"

namespace ebb::internal {

class BatchKvRegion {
 public:
  // `row_shape`: one row's KV geometry (batch 1, K and V apart); `rows`: the rows of the region.
  BatchKvRegion(const KvShape& row_shape, int rows);
  ~BatchKvRegion();
  BatchKvRegion(const BatchKvRegion&) = delete;
  BatchKvRegion& operator=(const BatchKvRegion&) = delete;

  // Tokens per row that make a row of one tensor whole pages: strides are multiples of it.
  int align_tokens() const { return align_tokens_; }
  // Tokens per row now; 0 when nothing is mapped.
  int stride() const { return stride_; }

  // Maps the region with `stride` tokens per row (a multiple of align_tokens()), copying each
  // listed row's first `columns` tokens (row, columns) of every tensor and head from the old
  // layout, then unmaps the old one. Throws ResourceExhausted, changing nothing, when the OS
  // refuses the mapping.
  void Relayout(int stride, const std::vector<std::pair<int, int>>& keep);
  // Gives the pages of `row` back to the OS (MADV_DONTNEED): it reads as zeros after.
  void ReleaseRow(int row) noexcept;
  // Unmaps everything; stride() is 0 after.
  void Unmap() noexcept;
  // Where row `row` of every tensor is (KvCache's slot mode binds it).
  KvSlotView SlotView(int row) const;
  // Resident bytes of the region now (mincore); 0 when nothing is mapped.
  uint64_t ResidentBytes() const;

 private:
  KvShape shape_;
  int rows_;
  uint64_t token_bytes_ = 0;  // one token of one row of one tensor
  int align_tokens_ = 1;
  int stride_ = 0;
  uint64_t row_bytes_ = 0;     // one row of one tensor
  uint64_t tensor_bytes_ = 0;  // one tensor, all rows
  char* region_ = nullptr;     // owned mapping of 2 * num_layers tensors
  uint64_t region_bytes_ = 0;
};

}  // namespace ebb::internal
