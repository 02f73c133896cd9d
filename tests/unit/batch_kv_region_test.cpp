// kv/batch_kv_region.h on its own: the batched-decode KV region (issue 38 moved it out of
// generate/decode_batcher.cpp). A re-layout keeps each listed row's tokens at their place in
// every tensor and head; a released row reads as zeros; unmapping leaves nothing resident.
#include "kv/batch_kv_region.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/pages.h"

namespace ebb::internal {
namespace {

KvShape Shape() {
  KvShape s;
  s.num_layers = 2;
  s.kv_heads = 2;
  s.head_size = 4;
  s.elem_bytes = 4;
  return s;
}

// The float at (tensor i, row, head h, column c, element d) through the row's slot view.
float& At(const BatchKvRegion& r, int i, int row, int h, int c, int d) {
  const KvSlotView v = r.SlotView(row);
  char* base = v.base + static_cast<uint64_t>(i) * v.tensor_stride_bytes;
  return reinterpret_cast<float*>(base)[(h * v.stride_tokens + c) * 4 + d];
}

TEST(BatchKvRegion, RelayoutKeepsRowsAndReleaseGivesPagesBack) {
  BatchKvRegion r(Shape(), 3);
  const int align = r.align_tokens();
  EXPECT_EQ(align * 2 * 4 * 4 % static_cast<int>(PageSize()), 0) << "a row is whole pages";
  EXPECT_EQ(r.stride(), 0);
  EXPECT_EQ(r.ResidentBytes(), 0u);
  r.Relayout(align, {});
  ASSERT_EQ(r.stride(), align);
  for (int i = 0; i < 4; ++i) {
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 3; ++c) {
        for (int d = 0; d < 4; ++d) At(r, i, 1, h, c, d) = 1000.0f * i + 100 * h + 10 * c + d;
      }
    }
  }
  At(r, 0, 2, 0, 0, 0) = 7.0f;  // row 2 is not kept
  EXPECT_GT(r.ResidentBytes(), 0u);
  r.Relayout(2 * align, {{1, 3}});
  ASSERT_EQ(r.stride(), 2 * align);
  for (int i = 0; i < 4; ++i) {
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 3; ++c) {
        for (int d = 0; d < 4; ++d) {
          ASSERT_EQ(At(r, i, 1, h, c, d), 1000.0f * i + 100 * h + 10 * c + d)
              << i << " " << h << " " << c << " " << d;
        }
      }
    }
  }
  EXPECT_EQ(At(r, 0, 2, 0, 0, 0), 0.0f) << "a row not kept starts empty";
  r.ReleaseRow(1);
  EXPECT_EQ(At(r, 3, 1, 1, 2, 3), 0.0f) << "a released row reads as zeros";
  r.Unmap();
  EXPECT_EQ(r.stride(), 0);
  EXPECT_EQ(r.ResidentBytes(), 0u);
}

}  // namespace
}  // namespace ebb::internal
