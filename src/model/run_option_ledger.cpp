#include "model/run_option_ledger.h"

#include "core/log.h"
#include "core/option_parse.h"
#include "ebb/error.h"
#include "ebb/options.h"
#include "ebb/version.h"
#include "kv/prefix_cache.h"
#include "memory/shrink_controller.h"
#include "ort/session_options.h"

namespace ebb::internal {
namespace {

constexpr const char* kShrinkEvery = "memory.shrink_every";
constexpr const char* kShrinkAbove = "memory.shrink_above";
constexpr const char* kPrefixMax = "prefix_cache.max_bytes";

bool Typed(const std::string& key) {
  return key == kShrinkEvery || key == kShrinkAbove || key == kPrefixMax;
}

}  // namespace

void RunOptionLedger::Apply(const std::string& key, const std::string& value) {
  // Checked here so that a bad key fails this call, not every later request.
  CheckRunOptionEntry(key, value);
  if (key == kShrinkEvery) {
    shrink_.ShrinkEvery(static_cast<uint32_t>(ParseInt(key, value, 0, UINT32_MAX)));
    EBB_LOG_INFO("run option {}='{}' of '{}' applied as the shrink policy", key, value, model_id_);
    return;
  }
  if (key == kShrinkAbove) {
    shrink_.ShrinkAbove(ParseByteSize(value, key));
    EBB_LOG_INFO("run option {}='{}' of '{}' applied as the shrink policy", key, value, model_id_);
    return;
  }
  if (key == kPrefixMax) {
    if (prefix_cache_ == nullptr) {
      throw Error(ErrorCode::FailedPrecondition,
                  "model '" + model_id_ + "' is an encoder: it has no KV and no prefix cache");
    }
    const uint64_t bytes = ParseByteSize(value, key);
    prefix_cache_->SetMaxBytes(bytes);
    EBB_LOG_INFO("prefix_cache.max_bytes of '{}' set to {}", model_id_, bytes);
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
  if (!IsKnownOrtRunKey(key)) {
    EBB_LOG_WARN(
        "run option '{}' of '{}' is not one ONNX Runtime {} documents{}; passing it to every "
        "Run() anyway (ORT ignores run keys it does not know)",
        key, model_id_, OrtVersion(), ClosestRunKey(key));
  }
  shrink_.SetRunOption(key, value);
}

void RunOptionLedger::Set(const std::string& key, const std::string& value) {
  MutexLock lock(mu_);  // one change at a time, so the record matches what is in force
  Apply(key, value);
  if (sealed_) set_since_load_.insert(key);
}

void RunOptionLedger::SealLoad() {
  MutexLock lock(mu_);
  at_load_ = Current();
  sealed_ = true;
}

void RunOptionLedger::Clear(const std::string& key) {
  MutexLock lock(mu_);
  const auto it = at_load_.find(key);
  if (it != at_load_.end()) {
    Apply(key, it->second);
  } else if (Typed(key)) {
    Apply(key, "0");
  } else {
    shrink_.ClearRunOption(key);
  }
  set_since_load_.erase(key);
  EBB_LOG_INFO("run option {} of '{}' cleared: {}", key, model_id_,
               it != at_load_.end() ? "back to its load-time value '" + it->second + "'"
                                    : std::string("unset"));
}

std::map<std::string, std::string> RunOptionLedger::Current() const {
  std::map<std::string, std::string> now = shrink_.RunOptions();
  now[kShrinkEvery] = std::to_string(shrink_.shrink_every());
  now[kShrinkAbove] = std::to_string(shrink_.shrink_above());
  if (prefix_cache_ != nullptr) now[kPrefixMax] = std::to_string(prefix_cache_->Stats().max_bytes);
  return now;
}

std::map<std::string, ModelControls::OptionInForce> RunOptionLedger::InForce() const {
  MutexLock lock(mu_);
  std::map<std::string, ModelControls::OptionInForce> out;
  for (const auto& [key, value] : Current()) {
    ModelControls::OptionInForce o;
    o.value = value;
    const auto at = at_load_.find(key);
    if (at != at_load_.end()) o.at_load = at->second;
    if (set_since_load_.count(key) > 0) {
      o.source = "runtime";
    } else if (at != at_load_.end() && !(Typed(key) && at->second == "0")) {
      o.source = "load";
    } else {
      o.source = "default";
    }
    out[key] = std::move(o);
  }
  return out;
}

}  // namespace ebb::internal
