#include "bench/embed_workload.h"

#include <chrono>

#include "ebb/embedding.h"
#include "ebb/model.h"
#include "ebb/runtime.h"

namespace ebb::bench {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

EmbedWorkload::EmbedWorkload(std::string name, const BenchOptions& options,
                             const EmbedDocuments& documents)
    : name_(std::move(name)), options_(options), documents_(documents) {}

EmbedWorkload::~EmbedWorkload() = default;

double EmbedWorkload::Setup() {
  const auto t = std::chrono::steady_clock::now();
  model_ = ebb::LoadModel(options_.model_dir, options_.model_options);
  return SecondsSince(t);
}

RequestTiming EmbedWorkload::RunIteration(int32_t index) {
  EmbedRequest req;
  req.input_ids = documents_.Rows(index, options_.batch);
  for (const auto& [k, v] : options_.embed_options) req.Set(k, v);
  const auto t = std::chrono::steady_clock::now();
  const EmbedResult r = Embed(model_, req);
  RequestTiming timing;
  timing.e2e_s = SecondsSince(t);
  timing.ttft_s = timing.e2e_s;
  AtLastToken();  // the vectors are still alive
  timing.prompt_tokens = static_cast<int32_t>(r.usage.prompt_tokens);
  timing.texts = static_cast<int32_t>(r.embeddings.size());
  timing.padded_tokens = static_cast<int64_t>(r.padded_tokens);
  return timing;
}

KvSample EmbedWorkload::Kv() const {
  if (!model_) return {0, 0, std::nullopt};
  const KvStats s = model_->kv_stats();
  return {s.in_use_bytes, s.reserved_bytes, std::nullopt};  // an encoder has no prefix cache
}

ArenaSample EmbedWorkload::Arena() const {
  if (!model_) return {};
  return ToArenaSample(model_->runtime().Stats().cpu_arena);
}

void EmbedWorkload::Shrink() {
  if (model_) {
    model_->runtime().ShrinkArena();
  } else {
    Workload::Shrink();
  }
}

void EmbedWorkload::Teardown() { model_.reset(); }

}  // namespace ebb::bench
