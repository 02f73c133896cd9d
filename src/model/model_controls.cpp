#include "ebb/model_controls.h"

#include "core/log.h"
#include "core/option_parse.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/version.h"
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
