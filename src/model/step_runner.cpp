#include "model/step_runner.h"

#include <memory>
#include <mutex>
#include <utility>

#include "ebb/error.h"
#include "model/model_impl.h"
#include "model/run_error.h"

namespace ebb::internal {
namespace {

// The test fault seam's state (SetStepFaultForTesting). `g_fault_armed` is the only thing a
// step reads when no hook is installed; the hook itself is copied under the mutex and called
// outside it, so a hook may run on several threads at once and may itself install another.
std::atomic<bool> g_fault_armed{false};
std::mutex g_fault_mu;
std::shared_ptr<const StepFaultHook> g_fault;  // guarded by g_fault_mu

std::string FaultFor(const ModelImpl& m, const StepDesc& d) {
  std::shared_ptr<const StepFaultHook> hook;
  {
    std::lock_guard<std::mutex> lock(g_fault_mu);
    hook = g_fault;
  }
  return hook ? (*hook)(m, d) : std::string();
}

}  // namespace

void SetStepFaultForTesting(StepFaultHook hook) {
  std::lock_guard<std::mutex> lock(g_fault_mu);
  g_fault = hook ? std::make_shared<const StepFaultHook>(std::move(hook)) : nullptr;
  g_fault_armed.store(g_fault != nullptr, std::memory_order_relaxed);
}

void StepBinding::Kv(const std::vector<std::string>& past_names,
                     const std::vector<std::string>& present_names, std::vector<Ort::Value>& past,
                     std::vector<Ort::Value>& present) {
  for (size_t i = 0; i < past.size(); ++i) Input(past_names[i], std::move(past[i]));
  for (size_t i = 0; i < present.size(); ++i) Output(present_names[i], std::move(present[i]));
}

void StepRunner::Run(StepBinding& b, const StepDesc& desc, const std::function<void()>& on_start) {
  if (g_fault_armed.load(std::memory_order_relaxed)) {
    const std::string fault = FaultFor(m_, desc);
    if (!fault.empty()) throw Error(ErrorCode::Internal, fault);
  }
  bool shrink = false;
  Ort::RunOptions ro = m_.shrink->BeginRun(&shrink);
  if (on_start) {
    try {
      on_start();
    } catch (...) {
      m_.shrink->EndRun(shrink, false);
      throw;
    }
  }
  try {
    m_.session->Run(ro, b.in_names_.data(), b.in_values_.data(), b.in_values_.size(),
                    b.out_names_.data(), b.out_values_.data(), b.out_values_.size());
    m_.shrink->EndRun(shrink, true);
    m_.CheckWeightsIntact();
  } catch (const Ort::Exception& e) {
    m_.shrink->EndRun(shrink, false);
    switch (desc.kind) {
      case StepKind::kDecode:
        throw RunError(m_, e.what(), "", desc.prefill_chunk);
      case StepKind::kBatchedDecode:
        throw RunError(
            m_, e.what(),
            " (batched decode step of " + std::to_string(desc.sequences) + " generators)", -1);
      case StepKind::kEncode:
        throw RunError(m_, e.what(), "", -1, "lower embed.batch_size or embed.max_batch_tokens");
    }
    throw;  // not reached: every kind is mapped above
  }
  num_runs_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ebb::internal
