#include "model/model_views.h"

#include "model/model_impl.h"

namespace ebb::internal {

RunView::RunView(Model& model) : m_(&ImplOf(model)) {}

Model& RunView::model() const { return *m_; }
const std::string& RunView::id() const { return m_->id; }
const GenaiConfig& RunView::config() const { return m_->config; }
const ModelOptions& RunView::options() const { return m_->options; }
const ModelInfo& RunView::info() const { return m_->info; }
const DecoderIo& RunView::io() const { return m_->io; }
const EncoderIo& RunView::encoder() const { return m_->encoder; }
const KvShape& RunView::kv_shape() const { return m_->kv_shape; }
bool RunView::attention_cost_follows_keys() const { return m_->attention_cost_follows_keys; }
KvPool& RunView::kv_pool() const { return *m_->kv_pool; }
PrefixCache* RunView::prefix_cache() const { return m_->prefix_cache.get(); }
ConstraintCache* RunView::constraints() const { return m_->constraints.get(); }
const Tokenizer* RunView::tokenizer() const { return m_->tokenizer_owned.get(); }
const Ort::MemoryInfo& RunView::cpu_memory() const { return m_->cpu_memory; }
Ort::Session& RunView::session() const { return *m_->session; }
StepRunner& RunView::runner() const { return m_->runner; }
ModelHost& RunView::host() const { return *m_->host; }
ShrinkController& RunView::shrink() const { return *m_->shrink; }

uint64_t RunView::AcquireSlot(bool in_call) const { return m_->AcquireGeneratorSlot(in_call); }
void RunView::ReleaseSlot(uint64_t slot) const noexcept { m_->ReleaseGeneratorSlot(slot); }
void RunView::BeginCall(uint64_t slot) const { m_->BeginCall(slot); }
void RunView::EndCall(uint64_t slot, bool request_open) const noexcept {
  m_->EndCall(slot, request_open);
}
void RunView::Touch() const { m_->Touch(); }

std::shared_ptr<DecodeBatcher> RunView::SharedDecodeBatcher(
    const std::function<std::shared_ptr<DecodeBatcher>()>& make) const {
  std::lock_guard<std::mutex> lock(m_->decode_batcher_mu);
  if (m_->decode_batcher || m_->decode_batcher_failed) return m_->decode_batcher;
  try {
    m_->decode_batcher = make();
  } catch (...) {
    m_->decode_batcher_failed = true;
    throw;
  }
  return m_->decode_batcher;
}

std::shared_ptr<DecodeBatcher> RunView::decode_batcher() const {
  std::lock_guard<std::mutex> lock(m_->decode_batcher_mu);
  return m_->decode_batcher;
}

void RunView::CountBatchedStep(int rows) const {
  m_->decode_batch_steps.fetch_add(1, std::memory_order_relaxed);
  m_->decode_batch_rows.fetch_add(static_cast<uint64_t>(rows), std::memory_order_relaxed);
}

LifecycleView::LifecycleView(Model& model) : m_(&ImplOf(model)) {}

int64_t LifecycleView::last_used_unix_ms() const { return m_->last_used_unix_ms(); }

void LifecycleView::Unload(Release mode) const {
  m_->Release(mode == Release::kDetach ? ModelImpl::ReleaseMode::kDetach
                                       : ModelImpl::ReleaseMode::kWaitForRequests);
}

}  // namespace ebb::internal
