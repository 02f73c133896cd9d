// Loading a model folder (model/model.cpp BuildModel), for the runtime. The loaded model is
// managed through LifecycleView (model_views.h).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "ebb/model.h"

namespace ebb::internal {

class ModelHost;

// What a model needs generated and model/ cannot build itself (it never constructs a
// Generator): the runtime supplies them at load.
struct ModelSteps {
  // One minimal Run() on the model (an idle shrink; see ShrinkController).
  std::function<void(Model&)> shrink;
  // Prefills `tokens` in a one-row generator with the prefix cache on, so that their whole
  // blocks are stored (ModelControls::PinPrefix). Throws what a Generator throws.
  std::function<void(Model&, std::span<const int32_t>)> prefill;
};

// Loads a model folder for `host` under `id`. Throws ebb::Error; on failure nothing stays loaded
// or allocated.
std::shared_ptr<Model> BuildModel(std::shared_ptr<ModelHost> host, std::string id,
                                  const std::filesystem::path& dir, const ModelOptions& options,
                                  ModelSteps steps);

}  // namespace ebb::internal
