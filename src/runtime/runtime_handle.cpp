#include "ebb/runtime_handle.h"

#include "ebb/model.h"
#include "memory/shrink_controller.h"
#include "model/model_impl.h"

namespace ebb {
namespace {
internal::ShrinkController& C(Model* m) { return *internal::ImplOf(*m).shrink; }
}  // namespace

void RuntimeHandle::ShrinkArena() { C(model_).ShrinkNow(); }
WeightsRelease RuntimeHandle::ReleaseWeights() {
  return internal::ImplOf(*model_).ReleaseWeights();
}
void RuntimeHandle::ShrinkAfterNextRun() { C(model_).ShrinkAfterNextRequest(); }
void RuntimeHandle::ShrinkEvery(uint32_t n) { C(model_).ShrinkEvery(n); }
void RuntimeHandle::ShrinkAbove(uint64_t rss_bytes) { C(model_).ShrinkAbove(rss_bytes); }
void RuntimeHandle::SetRunOption(const std::string& key, const std::string& value) {
  C(model_).SetRunOption(key, value);
}
void RuntimeHandle::ClearRunOption(const std::string& key) { C(model_).ClearRunOption(key); }
std::map<std::string, std::string> RuntimeHandle::Options() const { return C(model_).RunOptions(); }
MemoryStats RuntimeHandle::Stats() const { return model_->memory_stats(); }

}  // namespace ebb
