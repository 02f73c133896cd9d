// DecodeBatcher — decodes the concurrent generators of one model in one Run() per step
// (model option decode_batch.max_rows > 1; docs/memory.md "Batched decode").
//
// Who joins: batch_size-1 generators of a GroupQueryAttention graph with a shared past/present
// buffer (right-padded rows: GQA reads each row's length from the attention mask), while a row
// is free. Everything else runs alone, as without a batcher.
//
// KV as rows: the batcher maps one region (lazily: pages become resident only when written) laid
// out per layer, K then V, as [max_rows, kv_heads, stride, head_size] tensors; one row of one
// tensor is a whole number of pages. The stride follows the widest row, not max_length: ORT's
// CPU GroupQueryAttention costs in proportion to the buffer's width (measured: a 2048-token
// buffer made a 128-token decode ~3x slower), so the region starts narrow and is re-laid wider
// (x1.5, copying each row's valid columns) when a Run needs more columns. When every attention
// node runs on ebb's kernel (cpu_ops; its cost follows each row's valid keys), the first Run
// lays the region out at the full context length instead and it is never re-laid: only the
// virtual size grows (MAP_NORESERVE); where the OS refuses that address space, it grows as
// above. A member's KvCache is
// a [1, H, stride, D] view of its row (KvSlotView, read under the engine lock) that charges the
// model's KvPool for its tokens exactly as a pool-allocated cache would (budgets, memory.limit
// and the KV figures stay true); the mapping itself is not charged. Leave() gives the row's
// pages back to the OS (madvise MADV_DONTNEED); the last Leave() unmaps the region.
//
// Steps: a member's prompt runs alone (its own Run()s on its row view, batch 1); each decode
// token goes through Step(), which blocks until a batched Run() that includes it has finished.
// Prompts and steps interleave: while the batcher has other members, a member's prompt runs in
// chunks of decode_batch.prefill_chunk tokens (HasOtherMembers), and before each chunk it lets a
// step that is ready to run go first (LockEngineForPrompt), so a new request delays the others'
// next token by one chunk rather than by its whole prompt. (Other members, not only decoding
// ones: requests that arrive together would otherwise each see nobody decoding yet and run
// their prompts whole while the first of them waits for its second token.)
// A step covers the contiguous rows [lo, hi] between the lowest and highest waiting row; a row
// in that range that is not stepping (its thread is elsewhere, or it is in a prefill, or the row
// is free) is fed a pad token placed at its high-water column (the first column that holds no
// valid token) with a mask that does not advance it, so nothing valid is overwritten; its
// output is discarded. Every Run() on the batcher's memory (batched steps and the members' own
// prefill/rewind Runs) holds the engine lock, so a pad never races a member's own write.
// Policy: "gather" starts a step once every decoding member is waiting, or after max_wait_us;
// a member that missed a step's gather is not waited for again until it calls Step() (a paused
// or slow member costs the others at most one wait). "no-wait" starts at once with whoever is
// waiting. A member that is done (or rewinds) calls Pause() so that nobody waits for it.
// Errors: a failed batched Run() throws the same ebb::Error to every member of that step; each
// member's committed state is unchanged (its token was written past its valid length).
// Thread-safety: all methods are thread-safe. One thread calls Step() for a given row at a time
// (a Generator is used by one thread). Lock order: prompt_mu_, then engine_mu_, then mu_.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "kv/batch_kv_region.h"
#include "kv/kv_cache.h"
#include "model/decoder_feed.h"
#include "model/model_views.h"

namespace ebb::internal {

class DecodeBatcher {
 public:
  // The model's batcher, created on first use; null when decode_batch.max_rows <= 1 or the
  // region cannot be mapped (logged once; generators then run alone).
  static std::shared_ptr<DecodeBatcher> ForModel(RunView model);

  DecodeBatcher(RunView model, const KvShape& row_shape, int max_rows, bool no_wait,
                int max_wait_us);
  ~DecodeBatcher();
  DecodeBatcher(const DecodeBatcher&) = delete;
  DecodeBatcher& operator=(const DecodeBatcher&) = delete;

  // Takes the lowest free row for a generator of up to `max_length` tokens; -1 when every row is
  // taken or max_length is over the model's context_length.
  int Join(int max_length);
  // Frees `row` between steps (waits for a running step) and gives its pages back to the OS.
  void Leave(int row) noexcept;

  // Held around a member's own Run() on its row: EnsureColumns(the step's mask width), then
  // SlotView(row) (through its KvCache) to bind, Run, and NoteWritten(row, columns) after it
  // succeeded (the row's columns [0, columns) may now hold valid tokens).
  std::unique_lock<std::mutex> LockEngine() { return std::unique_lock<std::mutex>(engine_mu_); }
  // The engine for a member's prompt chunk, and the prompt turn: one prompt chunk at a time
  // competes with the steps for the engine (members' prompts queue on the turn). Declared in
  // that order so that the engine is released first.
  struct PromptTurn {
    std::unique_lock<std::mutex> turn;
    std::unique_lock<std::mutex> engine;
    bool owns_lock() const { return engine.owns_lock(); }
    void unlock() {
      engine.unlock();
      turn.unlock();
    }
  };
  // LockEngine() for a member's prompt chunk. Steps and chunks alternate: a batched step that is
  // ready (waiting for the engine) goes before the chunk, and the next step waits until the
  // chunk holds the engine: a step waits for one chunk at most, a chunk for one step.
  PromptTurn LockEngineForPrompt();
  // Whether a row other than `row` is taken: a prompt of `row` may then hold up its steps.
  bool HasOtherMembers(int row) const;
  // Engine lock held: makes the stride at least `columns` (re-lays the region wider; throws
  // ResourceExhausted when the OS refuses the mapping, changing nothing).
  void EnsureColumns(int columns);
  KvSlotView SlotView(int row) const;  // engine lock held
  void NoteWritten(int row, int columns);

  // Feeds `token` at column `pos` of `row` (its committed length) in the next batched step and
  // blocks until that step ran; `logits` receives the row's vocab_size float32 logits. Throws
  // the step's ebb::Error.
  void Step(int row, int32_t token, int32_t pos, std::vector<float>& logits);
  // The row's generator will not call Step() for a while (done, rewinding): nobody waits for it.
  void Pause(int row);

  // Test/bench figures.
  uint64_t steps() const;         // batched Run()s so far
  uint64_t stepped_rows() const;  // member tokens they produced
  uint64_t resident_bytes();      // pages of the region resident now (mincore)
  int stride();                   // columns per row now (0: nothing mapped)
  // The next batched step of at least `min_rows` members fails as a failed Run() would
  // (ebb::Error Internal), without running.
  void FailNextStepForTesting(int min_rows);

 private:
  struct Row {
    bool used = false;
    bool decoding = false;  // has stepped since joining and not paused: expected back soon
    bool missed = false;    // missed a gather: not waited for until it calls Step() again
    bool waiting = false;   // in Step(), not yet taken into a step
    bool ready = false;     // its step finished (result or error below)
    int32_t token = 0;
    int32_t pos = 0;
    int hw = 0;  // columns [0, hw) may hold valid tokens; pads go at column hw
    std::vector<float>* out = nullptr;
    std::exception_ptr error;
  };
  bool AllExpectedWaiting() const;  // mu_ held
  // Runs one step for the rows waiting now; called by the leader with `lk` (mu_) held; releases
  // and retakes it around the Run().
  void RunStep(std::unique_lock<std::mutex>& lk);

  RunView m_;      // non-owning: the model owns the batcher
  KvShape shape_;  // of one row (batch 1)
  int max_rows_;
  bool no_wait_;
  int max_wait_us_;
  int max_stride_ = 0;  // context_length + 1, aligned to the region's align_tokens()
  // Guarded by engine_mu_: lay the rows out at max_stride_ at once (the model's attention cost
  // follows the keys, not the width) until the OS refuses the address space.
  bool full_width_;

  std::mutex prompt_mu_;  // the prompt turn (PromptTurn): taken before engine_mu_, never after
  std::mutex engine_mu_;  // held around every Run() on region_ and every change of it
  BatchKvRegion region_;  // guarded by engine_mu_: the rows' KV (kv/batch_kv_region.h)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Row> rows_;             // guarded by mu_
  bool leader_active_ = false;        // guarded by mu_: a thread is gathering or running a step
  bool step_wants_engine_ = false;    // guarded by mu_: a gathered step waits for engine_mu_
  bool prompt_wants_engine_ = false;  // guarded by mu_: a prompt chunk's turn; steps wait
  uint64_t steps_ = 0;                // guarded by mu_
  uint64_t stepped_rows_ = 0;         // guarded by mu_
  // The batched step's inputs and logits; used only by the step leader (leader_active_), from
  // RunStep's inputs to its copy of each row's logits.
  DecoderFeed feed_;
};

}  // namespace ebb::internal
