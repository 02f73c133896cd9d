// The embedding path's internals (ebb::Embed is in ebb/embedding.h). embed/ sits beside
// generate/: it depends on model/ and below, and runtime/ hands RunEmbedShrinkStep to encoder
// models as their idle-shrink step.
#pragma once

#include <cstdint>
#include <vector>

#include "ebb/embedding.h"

namespace ebb {
class Model;
namespace internal {

// One minimal Run() (a single token) on an idle encoder, so that a pending arena shrink happens
// now. Not a request: no policy fires, no observer sees it. Throws what Embed's Run throws.
void RunEmbedShrinkStep(Model& model);

// The batches Embed runs: indices of `lengths` sorted by length (stable), cut into groups of at
// most `batch_size` rows whose rows x longest stays within `max_batch_tokens` (a longer row runs
// alone) and, when `max_padding` > 0, within max(kSmallRunTokens, max_padding x the group's
// summed lengths). Exposed for tests.
constexpr int64_t kSmallRunTokens = 128;
std::vector<std::vector<size_t>> PlanEmbedBatches(const std::vector<size_t>& lengths,
                                                  int32_t batch_size, int64_t max_batch_tokens,
                                                  double max_padding = 0);

}  // namespace internal
}  // namespace ebb
