#include "generate/decode_batcher.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <numeric>
#include <string>

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "model/model_impl.h"
#include "model/run_error.h"
#include "ort/index_tensor.h"

namespace ebb::internal {

std::shared_ptr<DecodeBatcher> DecodeBatcher::ForModel(ModelImpl& m) {
  if (m.options.decode_batch_max_rows <= 1) return nullptr;
  std::lock_guard<std::mutex> lock(m.decode_batcher_mu);
  if (m.decode_batcher || m.decode_batcher_failed) return m.decode_batcher;
  KvShape shape;
  shape.num_layers = m.info.num_layers;
  shape.kv_heads = m.info.num_kv_heads;
  shape.head_size = m.info.head_size;
  shape.batch = 1;
  shape.combined = m.io.combined_kv;
  shape.elem_type = m.io.kv_type;
  shape.elem_bytes = m.io.kv_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  try {
    m.decode_batcher = std::make_shared<DecodeBatcher>(m, shape, m.options.decode_batch_max_rows,
                                                       m.options.decode_batch_no_wait,
                                                       m.options.decode_batch_max_wait_us);
  } catch (const std::exception& e) {
    m.decode_batcher_failed = true;
    EBB_LOG_WARN("decode_batch.max_rows={}: batched decode is off for model '{}': {}",
                 m.options.decode_batch_max_rows, m.id, e.what());
  }
  return m.decode_batcher;
}

DecodeBatcher::DecodeBatcher(ModelImpl& model, const KvShape& row_shape, int max_rows, bool no_wait,
                             int max_wait_us)
    : m_(model),
      shape_(row_shape),
      max_rows_(max_rows),
      no_wait_(no_wait),
      max_wait_us_(max_wait_us) {
  if (shape_.combined) throw Error(ErrorCode::Internal, "a combined KV layout cannot be batched");
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  token_bytes_ = static_cast<uint64_t>(shape_.kv_heads) * shape_.head_size * shape_.elem_bytes;
  while ((static_cast<uint64_t>(align_tokens_) * token_bytes_) % page != 0) ++align_tokens_;
  // One spare column: a pad of a full row goes at column max_length.
  max_stride_ = (m_.info.context_length + 1 + align_tokens_ - 1) / align_tokens_ * align_tokens_;
  rows_.resize(static_cast<size_t>(max_rows_));
  EBB_LOG_INFO("model '{}': batched decode of up to {} rows ({} policy)", m_.id, max_rows_,
               no_wait_ ? "no-wait" : "gather");
}

DecodeBatcher::~DecodeBatcher() { Unmap(); }

void DecodeBatcher::Unmap() noexcept {
  if (region_ != nullptr) munmap(region_, region_bytes_);
  region_ = nullptr;
  region_bytes_ = row_bytes_ = tensor_bytes_ = 0;
  stride_ = 0;
}

void DecodeBatcher::EnsureColumns(int columns) {
  if (columns <= stride_) return;
  // Grow by half at least (copies stay linear in the final width), in 64-token steps.
  int64_t want = std::max<int64_t>({columns, stride_ + stride_ / 2, 64});
  const int64_t step = std::lcm<int64_t>(align_tokens_, 64);
  want = std::min<int64_t>((want + step - 1) / step * step, max_stride_);
  if (want < columns) {
    throw Error(ErrorCode::Internal, "batched decode row of " + std::to_string(columns) +
                                         " columns is over the context length (a bug in ebb)");
  }
  const int stride = static_cast<int>(want);
  const uint64_t row_bytes = static_cast<uint64_t>(stride) * token_bytes_;
  const uint64_t tensor_bytes = row_bytes * static_cast<uint64_t>(max_rows_);
  const uint64_t region_bytes = tensor_bytes * 2 * static_cast<uint64_t>(shape_.num_layers);
  // Address space only: rows become resident as tokens are written.
  void* p = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw Error(ErrorCode::ResourceExhausted, "batched decode: the OS refused to map " +
                                                  FormatBytes(region_bytes) + " for KV rows of " +
                                                  std::to_string(stride) + " tokens");
  }
  char* region = static_cast<char*>(p);
  if (region_ != nullptr) {
    // Copy each used row's columns that may hold valid tokens, per tensor and head.
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t d_bytes = static_cast<uint64_t>(shape_.head_size) * shape_.elem_bytes;
    for (int r = 0; r < max_rows_; ++r) {
      if (!rows_[r].used || rows_[r].hw == 0) continue;
      const uint64_t used = static_cast<uint64_t>(std::min(rows_[r].hw, stride_)) * d_bytes;
      for (int i = 0; i < 2 * shape_.num_layers; ++i) {
        const char* src = region_ + i * tensor_bytes_ + r * row_bytes_;
        char* dst = region + i * tensor_bytes + r * row_bytes;
        for (int h = 0; h < shape_.kv_heads; ++h) {
          std::memcpy(dst + h * stride * d_bytes, src + h * stride_ * d_bytes, used);
        }
      }
    }
    munmap(region_, region_bytes_);
  }
  region_ = region;
  region_bytes_ = region_bytes;
  row_bytes_ = row_bytes;
  tensor_bytes_ = tensor_bytes;
  stride_ = stride;
}

int DecodeBatcher::Join(int max_length) {
  if (max_length >= max_stride_) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  for (int r = 0; r < max_rows_; ++r) {
    if (!rows_[r].used) {
      rows_[r] = Row{};
      rows_[r].used = true;
      return r;
    }
  }
  return -1;
}

void DecodeBatcher::ReleaseRowPages(int row) noexcept {
  if (region_ == nullptr) return;
  for (int i = 0; i < 2 * shape_.num_layers; ++i) {
    madvise(region_ + i * tensor_bytes_ + static_cast<uint64_t>(row) * row_bytes_, row_bytes_,
            MADV_DONTNEED);
  }
}

void DecodeBatcher::Leave(int row) noexcept {
  {
    // After a running step (which may be writing a pad into this row).
    std::lock_guard<std::mutex> engine(engine_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    rows_[row] = Row{};
    // Nothing stays mapped once every row is free (a pad may have touched a free row).
    if (std::none_of(rows_.begin(), rows_.end(), [](const Row& r) { return r.used; })) {
      Unmap();
    } else {
      ReleaseRowPages(row);
    }
  }
  cv_.notify_all();  // a gathering leader may have been waiting for this row
}

KvSlotView DecodeBatcher::SlotView(int row) const {
  KvSlotView v;
  v.base = region_ + static_cast<uint64_t>(row) * row_bytes_;
  v.tensor_stride_bytes = tensor_bytes_;
  v.stride_tokens = stride_;
  return v;
}

void DecodeBatcher::NoteWritten(int row, int columns) {
  std::lock_guard<std::mutex> lock(mu_);
  rows_[row].hw = std::max(rows_[row].hw, std::min(columns, max_stride_ - 1));
}

void DecodeBatcher::Pause(int row) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    rows_[row].decoding = false;
  }
  cv_.notify_all();
}

uint64_t DecodeBatcher::steps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return steps_;
}

uint64_t DecodeBatcher::stepped_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stepped_rows_;
}

void DecodeBatcher::FailNextStepForTesting(int min_rows) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_min_rows_ = min_rows;
}

int DecodeBatcher::stride() {
  std::lock_guard<std::mutex> engine(engine_mu_);
  return stride_;
}

uint64_t DecodeBatcher::resident_bytes() {
  std::lock_guard<std::mutex> engine(engine_mu_);
  if (region_ == nullptr) return 0;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((region_bytes_ + page - 1) / page);
  if (mincore(region_, region_bytes_, vec.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char c : vec) n += c & 1;
  return n * page;
}

bool DecodeBatcher::AllExpectedWaiting() const {
  for (const Row& r : rows_) {
    if (r.used && r.decoding && !r.missed && !r.waiting) return false;
  }
  return true;
}

void DecodeBatcher::Step(int row, int32_t token, int32_t pos, std::vector<float>& logits) {
  std::unique_lock<std::mutex> lk(mu_);
  Row& me = rows_[row];
  me.token = token;
  me.pos = pos;
  me.out = &logits;
  me.error = nullptr;
  me.ready = false;
  me.decoding = true;
  me.missed = false;
  me.waiting = true;
  cv_.notify_all();  // a gathering leader may be waiting for this row
  while (!me.ready) {
    if (leader_active_) {
      cv_.wait(lk);
      continue;
    }
    // Lead: gather (policy), then run the step for every row waiting now.
    leader_active_ = true;
    if (!no_wait_ && max_wait_us_ > 0) {
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::microseconds(max_wait_us_);
      while (!AllExpectedWaiting()) {
        if (cv_.wait_until(lk, deadline) == std::cv_status::timeout) break;
      }
      for (Row& r : rows_) {
        if (r.used && r.decoding && !r.waiting) r.missed = true;
      }
    }
    try {
      RunStep(lk);
    } catch (...) {
      // Only bookkeeping can throw here (bad_alloc); the step's own errors went to its rows.
      leader_active_ = false;
      cv_.notify_all();
      throw;
    }
    leader_active_ = false;
    cv_.notify_all();
  }
  me.ready = false;
  me.out = nullptr;
  if (me.error) {
    std::exception_ptr e = std::move(me.error);
    me.error = nullptr;
    std::rethrow_exception(e);
  }
}

void DecodeBatcher::RunStep(std::unique_lock<std::mutex>& lk) {
  // The rows of this step: every row waiting now.
  int lo = INT_MAX, hi = -1;
  std::vector<int> stepping;
  for (int r = 0; r < max_rows_; ++r) {
    if (rows_[r].waiting) {
      rows_[r].waiting = false;
      stepping.push_back(r);
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
  }
  if (stepping.empty()) return;
  lk.unlock();

  const int64_t B = hi - lo + 1, V = m_.info.vocab_size;
  const auto& io = m_.io;
  const Ort::MemoryInfo& mem = m_.cpu_memory;
  std::exception_ptr error;
  std::vector<char> logits_out;
  const size_t elem = io.logits_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 ? 2 : 4;
  std::vector<int32_t> taken_pos(static_cast<size_t>(B), -1);  // column each stepping row wrote
  try {
    std::lock_guard<std::mutex> engine(engine_mu_);
    // Inputs, read under the engine lock: the high-water marks of idle rows are stable now.
    std::vector<int64_t> ids(B), pos(B), valid(B);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t b = 0; b < B; ++b) {
        const Row& r = rows_[lo + b];
        const bool steps = std::find(stepping.begin(), stepping.end(), lo + b) != stepping.end();
        if (steps) {
          ids[b] = r.token;
          pos[b] = r.pos;
          taken_pos[b] = r.pos;
        } else {
          // Idle: a pad at its high-water column, which holds nothing valid; it stays there.
          ids[b] = m_.info.pad_token_id;
          pos[b] = r.hw;
        }
        valid[b] = pos[b] + 1;
      }
      if (fail_min_rows_ > 0 && static_cast<int>(stepping.size()) >= fail_min_rows_) {
        fail_min_rows_ = 0;
        throw Error(ErrorCode::Internal, "injected batched Run() failure (FailNextStepForTesting)");
      }
    }
    const int64_t T = *std::max_element(valid.begin(), valid.end());
    EnsureColumns(static_cast<int>(T));  // may re-lay the region (mu_ not held here)
    std::vector<int64_t> mask(static_cast<size_t>(B * T), 0);
    for (int64_t b = 0; b < B; ++b) {
      std::fill(mask.begin() + b * T, mask.begin() + b * T + valid[b], 1);
    }
    std::vector<const char*> in_names, out_names;
    std::vector<Ort::Value> in_values, out_values;
    IndexTensor ids_in{io.input_ids_type, {}, {}}, mask_in{io.attention_mask_type, {}, {}},
        pos_in{io.position_ids_type, {}, {}};
    ids_in.Assign(ids);
    in_names.push_back(io.input_ids.c_str());
    in_values.push_back(ids_in.View(mem, {B, 1}));
    if (!io.attention_mask.empty()) {
      mask_in.Assign(mask);
      in_names.push_back(io.attention_mask.c_str());
      in_values.push_back(mask_in.View(mem, {B, T}));
    }
    if (!io.position_ids.empty()) {
      pos_in.Assign(pos);
      in_names.push_back(io.position_ids.c_str());
      in_values.push_back(pos_in.View(mem, {B, 1}));
    }
    // A graph rewritten for last-position logits (prefill_logits=last): one token per row, so
    // row b's logits are at flat position b. Its logits are [B, 1, V] either way.
    std::vector<int64_t> logits_index;
    const std::vector<int64_t> index_dims{B};
    if (!io.logits_index.empty()) {
      for (int64_t b = 0; b < B; ++b) logits_index.push_back(b);
      in_names.push_back(io.logits_index.c_str());
      in_values.push_back(
          Ort::Value::CreateTensor<int64_t>(mem, logits_index.data(), B, index_dims.data(), 1));
    }
    KvSlotView view = SlotView(lo);
    std::vector<Ort::Value> past, present;
    AppendSlotViews(view, static_cast<int>(B), shape_, mem, past);
    AppendSlotViews(view, static_cast<int>(B), shape_, mem, present);
    for (size_t i = 0; i < past.size(); ++i) {
      in_names.push_back(io.past_names[i].c_str());
      in_values.push_back(std::move(past[i]));
    }
    const size_t logits_bytes = static_cast<size_t>(B * V) * elem;
    logits_out.resize(logits_bytes);
    const std::vector<int64_t> ldims{B, 1, V};
    out_names.push_back(io.logits.c_str());
    out_values.push_back(Ort::Value::CreateTensor(mem, logits_out.data(), logits_bytes,
                                                  ldims.data(), ldims.size(), io.logits_type));
    for (size_t i = 0; i < present.size(); ++i) {
      out_names.push_back(io.present_names[i].c_str());
      out_values.push_back(std::move(present[i]));
    }
    bool shrink = false;
    Ort::RunOptions ro = m_.shrink->BeginRun(&shrink);
    try {
      m_.session->Run(ro, in_names.data(), in_values.data(), in_values.size(), out_names.data(),
                      out_values.data(), out_values.size());
      m_.shrink->EndRun(shrink, true);
      m_.CheckWeightsIntact();
    } catch (const Ort::Exception& e) {
      m_.shrink->EndRun(shrink, false);
      throw RunError(m_, e.what(),
                     " (batched decode step of " + std::to_string(stepping.size()) + " generators)",
                     -1);
    }
  } catch (...) {
    error = std::current_exception();
  }

  lk.lock();
  ++steps_;
  for (int r : stepping) {
    Row& row = rows_[r];
    row.error = error;
    if (!error) {
      const int64_t b = r - lo;
      float* dst = row.out->data();
      if (elem == 4) {
        std::memcpy(dst, reinterpret_cast<const float*>(logits_out.data()) + b * V,
                    V * sizeof(float));
      } else {
        const auto* src = reinterpret_cast<const Ort::Float16_t*>(logits_out.data()) + b * V;
        for (int64_t v = 0; v < V; ++v) dst[v] = src[v].ToFloat();
      }
      row.hw = std::max(row.hw, std::min(taken_pos[b] + 1, max_stride_ - 1));
      ++stepped_rows_;
    }
    row.ready = true;
  }
}

}  // namespace ebb::internal
