// RunShrinkStep — ebb's minimal one-token Run() on an idle model, so that a pending arena shrink
// happens now (ORT shrinks only at the end of a Run()). It is not a request: no policy fires, no
// observer sees it. The runtime hands it to the model's ShrinkController at load, so that model/
// never constructs a Generator.
#pragma once

namespace ebb {
class Model;
namespace internal {

// Throws what a Generator throws (e.g. FailedPrecondition after an unload).
void RunShrinkStep(Model& model);

}  // namespace internal
}  // namespace ebb
