#include "model/decoder_feed.h"

#include <algorithm>
#include <cstring>

#include "model/model_impl.h"

namespace ebb::internal {

DecoderFeed::DecoderFeed(const Model& model)
    : m_(ImplOf(model)),
      ids_{m_.io.input_ids_type, {}, {}},
      mask_{m_.io.attention_mask_type, {}, {}},
      pos_{m_.io.position_ids_type, {}, {}},
      elem_bytes_(m_.io.logits_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4) {}

void DecoderFeed::Reset(int64_t rows, int64_t tokens, int64_t mask_columns) {
  rows_ = rows;
  tokens_ = tokens;
  columns_ = mask_columns;
  ids_.Fill(static_cast<size_t>(rows * tokens));
  pos_.Fill(static_cast<size_t>(rows * tokens));
  mask_.Fill(static_cast<size_t>(rows * mask_columns));
  logit_col_.assign(static_cast<size_t>(rows), static_cast<int32_t>(tokens - 1));
}

void DecoderFeed::PutRightPaddedRow(int64_t b, const int32_t* tokens, int64_t first_pos,
                                    int64_t valid, int64_t real) {
  for (int64_t i = 0; i < tokens_; ++i) {
    ids_.Put(b * tokens_ + i, tokens[i]);
    pos_.Put(b * tokens_ + i, first_pos + i);
  }
  for (int64_t t = 0; t < std::min(valid, columns_); ++t) mask_.Put(b * columns_ + t, 1);
  if (real > 0) logit_col_[b] = static_cast<int32_t>(real - 1);
}

int64_t DecoderFeed::PutLeftPaddedRow(int64_t b, const int32_t* tokens,
                                      const std::vector<uint8_t>& mask_row, int64_t first_pos) {
  int64_t next = first_pos;
  const int64_t first_col = columns_ - tokens_;  // this step's first column in the mask row
  for (int64_t i = 0; i < tokens_; ++i) {
    const bool real = mask_row[first_col + i] != 0;
    ids_.Put(b * tokens_ + i, tokens[i]);
    pos_.Put(b * tokens_ + i, real ? next++ : 0);
  }
  for (int64_t t = 0; t < columns_; ++t) mask_.Put(b * columns_ + t, mask_row[t]);
  return next - first_pos;
}

void DecoderFeed::Bind(StepBinding& binding) {
  const DecoderIo& io = m_.io;
  const Ort::MemoryInfo& mem = m_.cpu_memory;
  const int64_t B = rows_, S = tokens_, V = m_.info.vocab_size;
  binding.Input(io.input_ids, ids_.View(mem, {B, S}));
  if (!io.attention_mask.empty()) binding.Input(io.attention_mask, mask_.View(mem, {B, columns_}));
  if (!io.position_ids.empty()) binding.Input(io.position_ids, pos_.View(mem, {B, S}));
  // A graph rewritten for last-position logits computes one row per sequence, the one it is
  // told to (flat index into the [B * S] positions of this Run).
  const bool last_only = !io.logits_index.empty();
  if (last_only) {
    logits_index_.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) logits_index_[b] = b * S + logit_col_[b];
    const int64_t index_dims[] = {B};  // ORT copies the shape
    binding.Input(io.logits_index,
                  Ort::Value::CreateTensor<int64_t>(mem, logits_index_.data(), B, index_dims, 1));
  }
  const int64_t positions = last_only ? 1 : S;
  const size_t logits_bytes = static_cast<size_t>(B * positions * V) * elem_bytes_;
  if (logits_out_.size() < logits_bytes) logits_out_.resize(logits_bytes);
  const int64_t ldims[] = {B, positions, V};
  binding.Output(io.logits, Ort::Value::CreateTensor(mem, logits_out_.data(), logits_bytes, ldims,
                                                     3, io.logits_type));
}

void DecoderFeed::Logits(int64_t b, float* dst) const {
  const int64_t V = m_.info.vocab_size;
  const bool last_only = !m_.io.logits_index.empty();
  const size_t off = static_cast<size_t>((last_only ? b : b * tokens_ + logit_col_[b]) * V);
  if (elem_bytes_ == 4) {
    std::memcpy(dst, reinterpret_cast<const float*>(logits_out_.data()) + off, V * sizeof(float));
  } else {
    const auto* src = reinterpret_cast<const Ort::Float16_t*>(logits_out_.data()) + off;
    for (int64_t v = 0; v < V; ++v) dst[v] = src[v].ToFloat();
  }
}

void DecoderFeed::TrimLogits(size_t max_bytes) {
  if (logits_out_.size() > max_bytes) std::vector<char>().swap(logits_out_);
}

}  // namespace ebb::internal
