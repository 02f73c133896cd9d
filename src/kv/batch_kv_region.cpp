#include "kv/batch_kv_region.h"

#include <cstring>
#include <optional>
#include <string>

#include "core/pages.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "platform/vm.h"

namespace ebb::internal {

BatchKvRegion::BatchKvRegion(const KvShape& row_shape, int rows) : shape_(row_shape), rows_(rows) {
  const uint64_t page = PageSize();
  token_bytes_ = static_cast<uint64_t>(shape_.kv_heads) * shape_.head_size * shape_.elem_bytes;
  while ((static_cast<uint64_t>(align_tokens_) * token_bytes_) % page != 0) ++align_tokens_;
}

BatchKvRegion::~BatchKvRegion() { Unmap(); }

void BatchKvRegion::Unmap() noexcept {
  if (region_ != nullptr) platform::Unmap(region_, region_bytes_);
  region_ = nullptr;
  region_bytes_ = row_bytes_ = tensor_bytes_ = 0;
  stride_ = 0;
}

void BatchKvRegion::Relayout(int stride, const std::vector<std::pair<int, int>>& keep) {
  const uint64_t row_bytes = static_cast<uint64_t>(stride) * token_bytes_;
  const uint64_t tensor_bytes = row_bytes * static_cast<uint64_t>(rows_);
  const uint64_t region_bytes = tensor_bytes * 2 * static_cast<uint64_t>(shape_.num_layers);
  // Address space only: rows become resident as tokens are written.
  const platform::MapResult m = platform::MapAnonymous(region_bytes, /*reserve=*/false);
  if (m.addr == nullptr) {
    throw Error(ErrorCode::ResourceExhausted, "batched decode: the OS refused to map " +
                                                  FormatBytes(region_bytes) + " for KV rows of " +
                                                  std::to_string(stride) + " tokens");
  }
  char* region = static_cast<char*>(m.addr);
  if (region_ != nullptr) {
    // Each kept row's columns that may hold valid tokens, per tensor and head.
    const uint64_t d_bytes = static_cast<uint64_t>(shape_.head_size) * shape_.elem_bytes;
    for (const auto& [r, columns] : keep) {
      const uint64_t used = static_cast<uint64_t>(std::min(columns, stride_)) * d_bytes;
      for (int i = 0; i < 2 * shape_.num_layers; ++i) {
        const char* src = region_ + i * tensor_bytes_ + r * row_bytes_;
        char* dst = region + i * tensor_bytes + r * row_bytes;
        for (int h = 0; h < shape_.kv_heads; ++h) {
          std::memcpy(dst + h * stride * d_bytes, src + h * stride_ * d_bytes, used);
        }
      }
    }
    platform::Unmap(region_, region_bytes_);
  }
  region_ = region;
  region_bytes_ = region_bytes;
  row_bytes_ = row_bytes;
  tensor_bytes_ = tensor_bytes;
  stride_ = stride;
}

void BatchKvRegion::ReleaseRow(int row) noexcept {
  if (region_ == nullptr) return;
  for (int i = 0; i < 2 * shape_.num_layers; ++i) {
    platform::Advise(region_ + i * tensor_bytes_ + static_cast<uint64_t>(row) * row_bytes_,
                     row_bytes_, platform::Advice::kDontNeed);
  }
}

KvSlotView BatchKvRegion::SlotView(int row) const {
  KvSlotView v;
  v.base = region_ + static_cast<uint64_t>(row) * row_bytes_;
  v.tensor_stride_bytes = tensor_bytes_;
  v.stride_tokens = stride_;
  return v;
}

uint64_t BatchKvRegion::ResidentBytes() const {
  if (region_ == nullptr) return 0;
  const std::optional<uint64_t> pages = platform::ResidentPages(region_, region_bytes_);
  return pages ? *pages * PageSize() : 0;
}

}  // namespace ebb::internal
