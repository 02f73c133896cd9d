#include "ebb/model_controls.h"

#include "core/log.h"
#include "core/option_parse.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/process_memory.h"
#include "ebb/version.h"
#include "kv/prefix_cache.h"
#include "memory/memory_governor.h"
#include "memory/shrink_controller.h"
#include "model/constraint_cache.h"
#include "model/model_device.h"
#include "model/model_impl.h"
#include "ort/arena_stats.h"
#include "ort/session_options.h"

namespace ebb {
namespace {
internal::ShrinkController& C(Model* m) { return *internal::ImplOf(*m).shrink; }
}  // namespace

void ModelControls::ShrinkArena() { C(model_).ShrinkNow(); }
WeightsRelease ModelControls::ReleaseWeights() {
  return internal::ImplOf(*model_).ReleaseWeights();
}
PrefixPin ModelControls::PinPrefix(std::span<const int32_t> tokens) {
  internal::ModelImpl& m = internal::ImplOf(*model_);
  if (!m.prefix_cache) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + m.id + "' is an encoder: it has no KV and no prefix cache");
  }
  constexpr size_t kBlock = internal::PrefixCache::kBlockTokens;
  if (!m.prefix_cache->enabled()) {
    throw Error(ErrorCode::FailedPrecondition,
                "the prefix cache of model '" + m.id +
                    "' is off (prefix_cache.max_bytes=0); set prefix_cache.max_bytes (at load, "
                    "or as a run option) before pinning a prefix");
  }
  if (tokens.size() < kBlock) {
    throw Error(ErrorCode::InvalidArgument, "a pinned prefix needs at least " +
                                                std::to_string(kBlock) +
                                                " tokens (one block); "
                                                "got " +
                                                std::to_string(tokens.size()));
  }
  PrefixPin out;
  out.tokens = tokens.size();
  const size_t whole = tokens.size() / kBlock * kBlock;
  // Prefill what is not stored yet (a request that would store it anyway), then pin what is.
  if (m.prefix_cache->Lookup(tokens, static_cast<int>(whole), false).tokens() <
      static_cast<int>(whole)) {
    m.prefill_step(*model_, tokens);
  }
  bool added = false;
  const int pinned = m.prefix_cache->Pin(tokens.first(whole), &added);
  if (pinned < static_cast<int>(whole)) {
    // Undo only this call's pin: the stored part may be a prefix pinned before (it stays).
    if (added) m.prefix_cache->Unpin(tokens.first(static_cast<size_t>(pinned)));
    const PrefixCacheStats st = m.prefix_cache->Stats();
    throw Error(ErrorCode::ResourceExhausted,
                "the prefix's " + std::to_string(whole) +
                    " tokens did not fit in the prefix "
                    "cache of model '" +
                    m.id + "' (" + std::to_string(pinned) + " stored; prefix_cache.max_bytes=" +
                    std::to_string(st.max_bytes) + ", " + std::to_string(st.pinned_bytes) +
                    " bytes pinned, or kv_cache.max_bytes / "
                    "memory.limit had no room); raise prefix_cache.max_bytes or unpin others; "
                    "nothing was pinned");
  }
  out.pinned_tokens = static_cast<uint64_t>(pinned);
  out.pinned = true;
  out.pinned_bytes = m.prefix_cache->Stats().pinned_bytes;
  EBB_LOG_INFO("pinned a prefix of {} tokens in the prefix cache of '{}'", pinned, m.id);
  return out;
}

PrefixPin ModelControls::UnpinPrefix(std::span<const int32_t> tokens) {
  internal::ModelImpl& m = internal::ImplOf(*model_);
  PrefixPin out;
  out.tokens = tokens.size();
  if (m.prefix_cache) {
    out.pinned = m.prefix_cache->Unpin(tokens);
    out.pinned_bytes = m.prefix_cache->Stats().pinned_bytes;
  }
  return out;
}

uint64_t ModelControls::DropPrefixCache() {
  internal::ModelImpl& m = internal::ImplOf(*model_);
  return m.prefix_cache ? m.prefix_cache->Drop(UINT64_MAX) : 0;
}

void ModelControls::SetPrefixCacheMaxBytes(uint64_t bytes) {
  SetRunOption("prefix_cache.max_bytes", std::to_string(bytes));
}

void ModelControls::ShrinkAfterNextRun() { C(model_).ShrinkAfterNextRequest(); }
void ModelControls::ShrinkEvery(uint32_t n) {
  SetRunOption("memory.shrink_every", std::to_string(n));
}
void ModelControls::ShrinkAbove(uint64_t rss_bytes) {
  SetRunOption("memory.shrink_above", std::to_string(rss_bytes));
}
// The one route of a Tier 2 key on every surface (C++, C, Python, HTTP PATCH, CLI) and at load:
// model/run_option_ledger.h.
void ModelControls::SetRunOption(const std::string& key, const std::string& value) {
  internal::ImplOf(*model_).run_options->Set(key, value);
}
void ModelControls::ClearRunOption(const std::string& key) {
  internal::ImplOf(*model_).run_options->Clear(key);
}
std::map<std::string, std::string> ModelControls::Options() const { return C(model_).RunOptions(); }
std::map<std::string, ModelControls::OptionInForce> ModelControls::OptionsInForce() const {
  return internal::ImplOf(*model_).run_options->InForce();
}
// Process, KV, device and ORT arena figures (docs/memory.md); reads /proc.
MemoryStats ModelControls::Stats() const {
  const internal::ModelImpl& m = internal::ImplOf(*model_);
  MemoryStats s;
  s.process = ReadProcessMemory();
  const KvStats pool = model_->kv_stats();
  if (m.kv_pool->device() != nullptr || m.device) {
    s.device = internal::ReadDeviceMemory(m, pool);
  }
  if (m.kv_pool->device() == nullptr) s.kv = pool;
  // After an unload the session is gone; its arena figures are not available.
  if (m.has_cpu_arena && !m.released()) {
    s.cpu_arena = internal::ReadCpuArenaStats(*m.session, m.cpu_memory);
  }
  s.num_shrinks = m.shrink->num_shrinks();
  s.num_requests = m.shrink->num_requests();
  s.shrink_every = m.shrink->shrink_every();
  s.shrink_above_bytes = m.shrink->shrink_above();
  s.ort_shrink_every_run = m.shrink->RunOptions().count("memory.enable_memory_arena_shrinkage") > 0;
  s.weights_bytes = m.weights_bytes;
  s.weights = m.WeightsStats();
  if (m.prefix_cache) s.prefix_cache = m.prefix_cache->Stats();
  if (m.constraints) s.constraints = m.constraints->Stats();
  s.decode_batch.max_rows = m.options.decode_batch_max_rows;
  s.decode_batch.steps = m.decode_batch_steps.load(std::memory_order_relaxed);
  s.decode_batch.rows = m.decode_batch_rows.load(std::memory_order_relaxed);
  s.limit_bytes = m.host->governor().limit();
  // This model's share of the charge (its weights are charged from load to unload, but for
  // file-backed pages it released).
  s.used_bytes = internal::ChargedBytes(m.ChargedWeightsBytes(), pool.in_use_bytes);
  return s;
}

}  // namespace ebb
