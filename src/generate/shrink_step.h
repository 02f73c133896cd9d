// RunShrinkStep — ebb's minimal one-token Run() on an idle model, so that a pending arena shrink
// happens now (ORT shrinks only at the end of a Run()). It is not a request: no policy fires, no
// observer sees it. The runtime hands it to the model's ShrinkController at load, so that model/
// never constructs a Generator.
#pragma once

#include <cstdint>
#include <span>

namespace ebb {
class Model;
namespace internal {

// Throws what a Generator throws (e.g. FailedPrecondition after an unload).
void RunShrinkStep(Model& model);
// ModelControls::PinPrefix's prefill: `tokens` in one row, stored by the model's prefix cache.
// Not a request either (no observer sees it, no hit or miss is counted). Throws what a Generator
// throws (InvalidArgument for a prompt past the context, ResourceExhausted, ...).
void RunPrefillStep(Model& model, std::span<const int32_t> tokens);

}  // namespace internal
}  // namespace ebb
