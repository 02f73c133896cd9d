#include "generate/decode_batcher.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <numeric>
#include <string>

#include "core/log.h"
#include "core/pages.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "model/step_runner.h"

namespace ebb::internal {

std::shared_ptr<DecodeBatcher> DecodeBatcher::ForModel(RunView m) {
  if (m.options().decode_batch_max_rows <= 1) return nullptr;
  try {
    return m.SharedDecodeBatcher([&] {
      return std::make_shared<DecodeBatcher>(m, m.kv_shape(), m.options().decode_batch_max_rows,
                                             m.options().decode_batch_no_wait,
                                             m.options().decode_batch_max_wait_us);
    });
  } catch (const std::exception& e) {
    EBB_LOG_WARN("decode_batch.max_rows={}: batched decode is off for model '{}': {}",
                 m.options().decode_batch_max_rows, m.id(), e.what());
  }
  return nullptr;
}

DecodeBatcher::DecodeBatcher(RunView model, const KvShape& row_shape, int max_rows, bool no_wait,
                             int max_wait_us)
    : m_(model),
      shape_(row_shape),
      max_rows_(max_rows),
      no_wait_(no_wait),
      max_wait_us_(max_wait_us),
      full_width_(model.attention_cost_follows_keys()),
      region_(row_shape, max_rows),
      feed_(model.model()) {
  if (shape_.combined) throw Error(ErrorCode::Internal, "a combined KV layout cannot be batched");
  // One spare column: a pad of a full row goes at column max_length.
  const int align = region_.align_tokens();
  max_stride_ = (m_.info().context_length + 1 + align - 1) / align * align;
  rows_.resize(static_cast<size_t>(max_rows_));
  EBB_LOG_INFO("model '{}': batched decode of up to {} rows ({} policy)", m_.id(), max_rows_,
               no_wait_ ? "no-wait" : "gather");
}

DecodeBatcher::~DecodeBatcher() = default;

void DecodeBatcher::EnsureColumns(int columns) {
  if (columns <= region_.stride()) return;
  // The used rows' columns that may hold valid tokens: hw, and the column of a token a step
  // just wrote whose hw the leader has not yet raised (it does so after the engine lock).
  std::vector<std::pair<int, int>> keep;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int r = 0; r < max_rows_; ++r) {
      const int written = std::max(rows_[r].hw, rows_[r].pos + 1);
      if (rows_[r].used && written > 0) keep.emplace_back(r, written);
    }
  }
  // When the attention's cost does not follow the width: the full width at once, so the region
  // is never re-laid (the copy and its page faults cost ~6% of a 4-row step over 300 tokens);
  // the pages stay lazily resident, only the virtual size grows. Where the OS refuses that much
  // address space (vm.overcommit_memory=2, ulimit -v), the region grows as below instead.
  if (full_width_) {
    try {
      region_.Relayout(max_stride_, keep);
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::ResourceExhausted) throw;
      full_width_ = false;
      EBB_LOG_INFO("model '{}': batched decode rows grow as needed ({})", m_.id(), e.what());
    }
  }
  // Grow by half at least (copies stay linear in the final width), in 64-token steps.
  const int stride = region_.stride();
  int64_t want = std::max<int64_t>({columns, stride + stride / 2, 64});
  const int64_t step = std::lcm<int64_t>(region_.align_tokens(), 64);
  want = std::min<int64_t>((want + step - 1) / step * step, max_stride_);
  if (want < columns) {
    throw Error(ErrorCode::Internal, "batched decode row of " + std::to_string(columns) +
                                         " columns is over the context length (a bug in ebb)");
  }
  region_.Relayout(static_cast<int>(want), keep);
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

void DecodeBatcher::Leave(int row) noexcept {
  {
    // After a running step (which may be writing a pad into this row).
    std::lock_guard<std::mutex> engine(engine_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    rows_[row] = Row{};
    // Nothing stays mapped once every row is free (a pad may have touched a free row).
    if (std::none_of(rows_.begin(), rows_.end(), [](const Row& r) { return r.used; })) {
      region_.Unmap();
    } else {
      region_.ReleaseRow(row);
    }
  }
  cv_.notify_all();  // a gathering leader may have been waiting for this row
}

KvSlotView DecodeBatcher::SlotView(int row) const { return region_.SlotView(row); }

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
  // On the Run path's one fault seam (model/step_runner.h): this model's next batched step of
  // at least `min_rows` generators, once.
  auto armed = std::make_shared<std::atomic<bool>>(true);
  const Model* model = &m_.model();
  SetStepFaultForTesting(
      [armed, model, min_rows](const Model& m, const StepDesc& step) -> std::string {
        if (&m != model || step.kind != StepKind::kBatchedDecode || step.sequences < min_rows) {
          return "";
        }
        if (!armed->exchange(false)) return "";
        return "injected batched Run() failure (FailNextStepForTesting)";
      });
}

int DecodeBatcher::stride() {
  std::lock_guard<std::mutex> engine(engine_mu_);
  return region_.stride();
}

uint64_t DecodeBatcher::resident_bytes() {
  std::lock_guard<std::mutex> engine(engine_mu_);
  return region_.ResidentBytes();
}

DecodeBatcher::PromptTurn DecodeBatcher::LockEngineForPrompt() {
  // Steps and prompt chunks alternate by hand-off, not by who wins engine_mu_: std::mutex is not
  // fair, and on 2 cores busy with a Run a woken thread is often the last to run, so a member
  // that decodes without pause would win it every time (or the members' queued chunks would,
  // against a step). Only the holder of the prompt turn competes with the steps.
  PromptTurn t;
  t.turn = std::unique_lock<std::mutex>(prompt_mu_);
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (step_wants_engine_) {
      // A ready step goes first: wait until a step has run (steps_ only grows, so a late wake-up
      // cannot miss it), not until the flag is down, which it may be again by then.
      const uint64_t seen = steps_;
      cv_.wait(lk, [&] { return steps_ != seen || !step_wants_engine_; });
    }
    prompt_wants_engine_ = true;  // the next step waits until this chunk holds the engine
  }
  t.engine = std::unique_lock<std::mutex>(engine_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);  // lock order: engine_mu_, then mu_
    prompt_wants_engine_ = false;
  }
  cv_.notify_all();
  return t;
}

bool DecodeBatcher::HasOtherMembers(int row) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int r = 0; r < max_rows_; ++r) {
    if (r != row && rows_[r].used) return true;
  }
  return false;
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
  // Announced before anything else, so that the next prompt chunk waits for this step even when
  // this thread gets no CPU while the current chunk's Run() keeps both cores busy
  // (LockEngineForPrompt); a chunk that already had its turn takes the engine first.
  step_wants_engine_ = true;
  cv_.wait(lk, [this] { return !prompt_wants_engine_; });
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
  if (stepping.empty()) {
    step_wants_engine_ = false;
    cv_.notify_all();
    return;
  }
  lk.unlock();

  const int64_t B = hi - lo + 1;
  std::exception_ptr error;
  std::vector<int32_t> taken_pos(static_cast<size_t>(B), -1);  // column each stepping row wrote
  try {
    std::lock_guard<std::mutex> engine(engine_mu_);
    // Inputs, read under the engine lock: the high-water marks of idle rows are stable now.
    std::vector<int32_t> ids(B);
    std::vector<int64_t> pos(B), valid(B);
    {
      std::lock_guard<std::mutex> lock(mu_);
      step_wants_engine_ = false;  // this step holds the engine: prompt chunks queue behind it
      cv_.notify_all();
      for (int64_t b = 0; b < B; ++b) {
        const Row& r = rows_[lo + b];
        const bool steps = std::find(stepping.begin(), stepping.end(), lo + b) != stepping.end();
        if (steps) {
          ids[b] = r.token;
          pos[b] = r.pos;
          taken_pos[b] = r.pos;
        } else {
          // Idle: a pad at its high-water column, which holds nothing valid; it stays there.
          ids[b] = m_.info().pad_token_id;
          pos[b] = r.hw;
        }
        valid[b] = pos[b] + 1;
      }
    }
    const int64_t T = *std::max_element(valid.begin(), valid.end());
    EnsureColumns(static_cast<int>(T));  // may re-lay the region (mu_ not held here)
    // One token per row, right-padded (GQA); with last-position logits row b's are at flat
    // position b. Its logits are [B, 1, V] either way.
    feed_.Reset(B, 1, T);
    for (int64_t b = 0; b < B; ++b) feed_.PutRightPaddedRow(b, &ids[b], pos[b], valid[b], 1);
    StepBinding bind;
    feed_.Bind(bind);
    KvSlotView view = SlotView(lo);
    std::vector<Ort::Value> past, present;
    AppendSlotViews(view, static_cast<int>(B), shape_, m_.cpu_memory(), past);
    AppendSlotViews(view, static_cast<int>(B), shape_, m_.cpu_memory(), present);
    bind.Kv(m_.io().past_names, m_.io().present_names, past, present);
    StepDesc desc;
    desc.kind = StepKind::kBatchedDecode;
    desc.sequences = static_cast<int>(stepping.size());
    m_.runner().Run(bind, desc);
    m_.CountBatchedStep(desc.sequences);
  } catch (...) {
    error = std::current_exception();
  }

  lk.lock();
  step_wants_engine_ = false;  // also when the step failed before it took the engine
  ++steps_;
  for (int r : stepping) {
    Row& row = rows_[r];
    row.error = error;
    if (!error) {
      const int64_t b = r - lo;
      feed_.Logits(b, row.out->data());
      row.hw = std::max(row.hw, std::min(taken_pos[b] + 1, max_stride_ - 1));
      ++stepped_rows_;
    }
    row.ready = true;
  }
}

}  // namespace ebb::internal
