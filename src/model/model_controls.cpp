#include "ebb/model_controls.h"

#include "core/log.h"
#include "core/option_parse.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/version.h"
#include "kv/prefix_cache.h"
#include "memory/shrink_controller.h"
#include "model/model_impl.h"
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
  internal::ModelImpl& m = internal::ImplOf(*model_);
  if (!m.prefix_cache) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + m.id + "' is an encoder: it has no KV and no prefix cache");
  }
  m.prefix_cache->SetMaxBytes(bytes);
  EBB_LOG_INFO("prefix_cache.max_bytes of '{}' set to {}", m.id, bytes);
}

void ModelControls::ShrinkAfterNextRun() { C(model_).ShrinkAfterNextRequest(); }
void ModelControls::ShrinkEvery(uint32_t n) { C(model_).ShrinkEvery(n); }
void ModelControls::ShrinkAbove(uint64_t rss_bytes) { C(model_).ShrinkAbove(rss_bytes); }
// The one route of a Tier 2 key on every surface (C++, C, Python, HTTP PATCH, CLI): ebb's
// shrink policies are applied as policies, ebb's load-time keys are refused naming where they
// belong, and anything else is an ORT run config entry, with a warning when the pinned ORT does
// not document it (ORT ignores unknown run keys without a word).
void ModelControls::SetRunOption(const std::string& key, const std::string& value) {
  // Checked here so that a bad key fails this call, not every later request.
  internal::CheckRunOptionEntry(key, value);
  if (key == "memory.shrink_every") {
    ShrinkEvery(static_cast<uint32_t>(internal::ParseInt(key, value, 0, UINT32_MAX)));
    EBB_LOG_INFO("run option {}='{}' applied as the shrink policy (ShrinkEvery)", key, value);
    return;
  }
  if (key == "prefix_cache.max_bytes") {
    SetPrefixCacheMaxBytes(ParseByteSize(value, key));
    return;
  }
  if (key == "memory.shrink_above") {
    ShrinkAbove(ParseByteSize(value, key));
    EBB_LOG_INFO("run option {}='{}' applied as the shrink policy (ShrinkAbove)", key, value);
    return;
  }
  if (const OptionSpec* spec = FindOption(key);
      spec != nullptr && !HasScope(*spec, OptionScope::kRunOption)) {
    std::string where;
    const auto add = [&](OptionScope scope, const char* text) {
      if (!HasScope(*spec, scope)) return;
      where += (where.empty() ? "" : " and ") + std::string(text);
    };
    add(OptionScope::kModel, "a model option, set at load (--option)");
    add(OptionScope::kSession, "a session option, set at load (--session-option)");
    add(OptionScope::kRuntime, "a runtime option (Runtime, ebb serve flags)");
    add(OptionScope::kRequest, "a request option (set it per request)");
    throw Error(ErrorCode::InvalidArgument,
                "'" + key + "' is " + where + ", not a run option; nothing was set");
  }
  if (!internal::IsKnownOrtRunKey(key)) {
    EBB_LOG_WARN(
        "run option '{}' is not one ONNX Runtime {} documents{}; passing it to every Run() "
        "anyway (ORT ignores run keys it does not know)",
        key, OrtVersion(), internal::ClosestRunKey(key));
  }
  C(model_).SetRunOption(key, value);
}
void ModelControls::ClearRunOption(const std::string& key) { C(model_).ClearRunOption(key); }
std::map<std::string, std::string> ModelControls::Options() const { return C(model_).RunOptions(); }
MemoryStats ModelControls::Stats() const { return model_->memory_stats(); }

}  // namespace ebb
