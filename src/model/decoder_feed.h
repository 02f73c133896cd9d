// DecoderFeed — one decoder step's inputs and logits, built one way for a generator's own steps
// and for the batched decode steps: input_ids and position_ids [B, S], attention_mask [B, T],
// for right-padded (GQA: a row's tokens at columns [0, length)) and left-padded (GPT-2 style:
// rows aligned on the right, a mask history per row) rows; the last-position logits index of a
// graph rewritten for it (last_logits.h); the logits output buffer, float32 or float16; and the
// wanted position of each row read back as float32.
//
// Use: Reset(B, S, T), then one Put*Row per row, Bind() into the step's StepBinding, run the
// step, then Logits(b, ...) per row. The integer inputs are held in the graph's declared type
// (IndexTensor); the buffers are reused from step to step (0 B per decode step after the first).
// Ownership: holds a non-owning reference to the model (outlives it). Not thread-safe: one owner
// (a generator, or the batcher's step leader) builds, binds and reads it; the bound views borrow
// its buffers, so it must outlive the Run().
#pragma once

#include <cstdint>
#include <vector>

#include "ebb/model.h"
#include "model/step_runner.h"
#include "ort/index_tensor.h"

namespace ebb::internal {

class ModelImpl;

class DecoderFeed {
 public:
  explicit DecoderFeed(const Model& model);  // an ebb-loaded model
  DecoderFeed(const DecoderFeed&) = delete;
  DecoderFeed& operator=(const DecoderFeed&) = delete;

  // Starts a step of `rows` rows of `tokens` new tokens each and a mask `mask_columns` wide:
  // every id, position and mask column 0, every row's logits at its last new token.
  void Reset(int64_t rows, int64_t tokens, int64_t mask_columns);
  // Right-padded row b: tokens[i] at position first_pos + i (i < tokens of the step); the mask
  // is 1 over [0, valid) and 0 after. `real` of the tokens are real (the rest are pads after
  // them): the row's logits are read at its last real token (at the last one when real is 0).
  void PutRightPaddedRow(int64_t b, const int32_t* tokens, int64_t first_pos, int64_t valid,
                         int64_t real);
  // Left-padded row b: `mask_row` is the row's whole mask history (mask_columns of it) with this
  // step's tokens as its last `tokens` columns; a real one (mask 1) gets the next position from
  // first_pos on, a pad position 0. Returns how many of the step's tokens are real.
  int64_t PutLeftPaddedRow(int64_t b, const int32_t* tokens, const std::vector<uint8_t>& mask_row,
                           int64_t first_pos);

  // Binds input_ids, attention_mask and position_ids (those the graph has), the logits index
  // (a last-position graph) and the logits output into `binding`.
  void Bind(StepBinding& binding);
  // After the Run: row b's logits at its wanted position, vocab_size float32 values at `dst`.
  void Logits(int64_t b, float* dst) const;
  // Frees the logits buffer when it is over `max_bytes` (a long unchunked prompt's [B, S, V]
  // buffer is not kept for decoding).
  void TrimLogits(size_t max_bytes);

 private:
  const ModelImpl& m_;
  int64_t rows_ = 0, tokens_ = 0, columns_ = 0;
  IndexTensor ids_, mask_, pos_;
  std::vector<int32_t> logit_col_;     // per row: the column of this step whose logits it wants
  std::vector<int64_t> logits_index_;  // last-position graphs: b * S + logit_col_[b]
  std::vector<char> logits_out_;       // ORT's logits output [B, S or 1, V]
  size_t elem_bytes_ = 4;              // of the logits: 4 (float32) or 2 (float16)
};

}  // namespace ebb::internal
