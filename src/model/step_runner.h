// StepRunner — the one way down to ONNX Runtime's Run() for a loaded model. Decode (a
// generator's own steps), batched decode (DecodeBatcher) and embeddings bind their tensors into
// a StepBinding and call Run(), which does the rest in one place, in this order:
//   1. the test fault seam (SetStepFaultForTesting; one relaxed atomic load when unused);
//   2. the model's ShrinkController::BeginRun (run options, a pending shrink);
//   3. the caller's `on_start` (e.g. a generator opens its request: observers see it start);
//   4. Session::Run, then ShrinkController::EndRun (on success and on failure alike);
//   5. ModelImpl::CheckWeightsIntact (a faulted mapped weights file: Unavailable);
//   6. the model's run count.
// An ORT failure becomes an ebb::Error through RunError (model/run_error.h), named after the
// step's kind, so that the same failure says the same thing on every path.
//
// Ownership: one per ModelImpl (ModelImpl::runner), holding a non-owning reference to it; the
// session, the shrink controller and the CPU memory info are the model's, set at load before any
// step runs. Thread-safety: Run() may be called from any number of threads at once (ORT's
// Session::Run and the ShrinkController are thread-safe); a StepBinding belongs to one caller.
// State after failure: whatever Run() throws, ORT has not completed the step and EndRun was
// called; the bound outputs may be partly written (callers bind memory they can discard or
// that holds nothing valid there) and the run count is unchanged.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebb {
class Model;
}

namespace ebb::internal {

class ModelImpl;

// What a step is: for the error's wording and for the fault seam.
enum class StepKind {
  kDecode,         // a generator's own Run() (prefill chunk, decode token, rewind re-run)
  kBatchedDecode,  // one DecodeBatcher step over several generators' rows
  kEncode,         // one padded batch of an embedding request
};

struct StepDesc {
  StepKind kind = StepKind::kDecode;
  // kBatchedDecode: the generators stepping in it (for the error, and for a fault hook).
  int sequences = 1;
  // kDecode: the request's prefill_chunk_size, for the arena-cap hint (RunError); -1: none.
  int prefill_chunk = -1;
};

// The names and values of one Run(). Names are borrowed: they must outlive the Run() (they are
// the model's DecoderIo/EncoderIo strings). An output bound as Ort::Value{nullptr} is allocated
// by ORT and handed back in outputs() after Run().
class StepBinding {
 public:
  void Input(const std::string& name, Ort::Value value) {
    in_names_.push_back(name.c_str());
    in_values_.push_back(std::move(value));
  }
  void Output(const std::string& name, Ort::Value value) {
    out_names_.push_back(name.c_str());
    out_values_.push_back(std::move(value));
  }
  // Per layer K then V (or combined), with the model's past/present names (same order).
  void Kv(const std::vector<std::string>& past_names, const std::vector<std::string>& present_names,
          std::vector<Ort::Value>& past, std::vector<Ort::Value>& present);
  std::vector<Ort::Value>& outputs() { return out_values_; }

 private:
  friend class StepRunner;
  std::vector<const char*> in_names_, out_names_;
  std::vector<Ort::Value> in_values_, out_values_;
};

class StepRunner {
 public:
  explicit StepRunner(ModelImpl& model) : m_(model) {}
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // Runs one step (see the top). `on_start`, when set, runs after BeginRun and before the Run;
  // if it throws, the step does not run (EndRun is called) and its exception propagates.
  // Throws: ebb::Error from RunError for an ORT failure (ResourceExhausted for an allocation
  // failure, with the arena.max_mem fix when a cap is set; Internal otherwise); Internal from an
  // armed fault hook; what BeginRun, `on_start` and CheckWeightsIntact throw.
  void Run(StepBinding& binding, const StepDesc& desc,
           const std::function<void()>& on_start = nullptr);

  // Successful Run()s of this model so far (every kind).
  uint64_t num_runs() const { return num_runs_.load(std::memory_order_relaxed); }

 private:
  ModelImpl& m_;  // non-owning: the model owns the runner
  std::atomic<uint64_t> num_runs_{0};
};

// TEST-ONLY: the one fault seam of the Run path (tests/, generate/generator_testing.h and
// DecodeBatcher::FailNextStepForTesting build on it; production code never arms it).
// Every later step of every model, on any thread, first calls `hook` (on the thread running the
// step, possibly concurrently); a non-empty return makes that step throw
// ebb::Error(Internal, <the returned text>) before BeginRun, as a failed Run() would, without
// running. One hook at a time: installing replaces the previous one; null disarms. When none is
// installed a step pays one relaxed atomic load.
using StepFaultHook = std::function<std::string(const Model& model, const StepDesc& step)>;
void SetStepFaultForTesting(StepFaultHook hook);

}  // namespace ebb::internal
