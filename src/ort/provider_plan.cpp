#include "ort/provider_plan.h"

#include <algorithm>

#include "ort/execution_providers.h"

namespace ebb::internal {

bool IsGpuProvider(const std::string& canonical) {
  return canonical == "cuda" || canonical == "tensorrt" || canonical == "rocm" ||
         canonical == "migraphx";
}

bool ProviderPlan::has_gpu() const {
  return std::any_of(order.begin(), order.end(), IsGpuProvider);
}

std::string ProviderPlan::FirstAccelerator() const {
  for (const auto& p : order) {
    if (p != "cpu") return p;
  }
  return {};
}

std::string ProviderPlan::Describe() const {
  std::string s;
  bool cpu = false;
  for (const auto& ep : order) {
    cpu |= ep == "cpu";
    s += (s.empty() ? "" : ", then ") + ep + " (" + named_by.at(ep) + ")";
  }
  if (!cpu) s += s.empty() ? "cpu" : ", then cpu";  // ORT falls back to CPU for what is left
  return s;
}

ProviderPlan ResolveProviders(const std::vector<ProviderOptions>& config_providers,
                              const ModelOptions& options) {
  ProviderPlan plan;
  auto add = [&plan](const std::string& ep, const std::string& who) {
    if (!plan.options.count(ep)) plan.order.push_back(ep);
    plan.named_by.emplace(ep, who);
    return &plan.options[ep];
  };
  for (const auto& po : config_providers) {
    auto* opts = add(CanonicalProviderName(po.name), "genai_config.json");
    for (const auto& [k, v] : po.options) (*opts)[k] = v;
  }
  for (const auto& [name, kv] : options.provider_options) {
    auto* opts = add(CanonicalProviderName(name), "provider_options." + name);
    for (const auto& [k, v] : kv) (*opts)[k] = v;
  }
  if (!options.execution_provider.empty()) {
    const std::string ep = CanonicalProviderName(options.execution_provider);
    for (const auto& other : plan.order) {
      if (other != ep) plan.dropped.push_back(other);
    }
    auto keep = plan.options[ep];
    plan.options.clear();
    plan.options[ep] = std::move(keep);
    plan.order.assign(1, ep);
    plan.named_by[ep] = "execution_provider=" + options.execution_provider;
  }
  return plan;
}

}  // namespace ebb::internal
