// The execution providers a session runs on, resolved once from the model config and the user's
// options (issue 22's session plan, for providers): session creation appends them, the model
// cache keys its entries by them, and the shrink controller reads whether a GPU is among them.
// Before, each of the three resolved the list itself, and the shrink controller's copy ignored
// execution_provider (a config naming cuda, run with --ep cpu, accepted a gpu:0 shrink key that
// then failed every Run()).
// Thread-safety: pure functions over their arguments.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ebb/options.h"
#include "ort/provider_options.h"

namespace ebb::internal {

struct ProviderPlan {
  // Canonical names (ort/execution_providers.h) in the order ORT gets them; empty: CPU only.
  std::vector<std::string> order;
  // Each provider's options: the config's, then the user's (a user key replaces the config's).
  std::map<std::string, std::map<std::string, std::string>> options;
  // Who named each provider, for messages: "genai_config.json", "provider_options.cuda",
  // "execution_provider=cpu" (dropped providers keep theirs).
  std::map<std::string, std::string> named_by;
  // Providers the config or provider_options named that execution_provider replaced.
  std::vector<std::string> dropped;

  // Whether the session runs on a GPU provider whose arena ORT's "gpu:N" shrink key acts on.
  bool has_gpu() const;
  // For messages: "cpu (execution_provider=cpu)", "cuda (genai_config.json), then cpu".
  std::string Describe() const;
  // The first provider other than the CPU's ("cuda", "dml", ...), whose kernels ORT prefers;
  // empty when the session runs on the CPU only.
  std::string FirstAccelerator() const;
};

// `config_providers`: genai_config.json's list; `options`: provider_options and
// execution_provider (which, when set, replaces the list: "cpu" runs on CPU whatever the config
// names).
ProviderPlan ResolveProviders(const std::vector<ProviderOptions>& config_providers,
                              const ModelOptions& options);

// Whether `canonical` is a GPU provider with a device arena ("cuda", "tensorrt", "rocm",
// "migraphx").
bool IsGpuProvider(const std::string& canonical);

}  // namespace ebb::internal
