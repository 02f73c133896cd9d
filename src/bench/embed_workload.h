// `ebb bench --scenario embed`: the encoder model alive for the run; every iteration is one
// ebb::Embed call (one request) on `options.batch` documents of mixed lengths (EmbedDocuments),
// fed as token id rows, so that tokenization is not timed (the naive loop is fed the same rows).
// The request's options are EmbedOptions' defaults with `options.embed_options` applied. The
// memory sample at the request's end (AtLastToken) is taken while the result is still alive.
// Ownership: the workload owns the model and each request's result; `options` and `documents`
// are borrowed and must outlive it.
#pragma once

#include <memory>
#include <string>

#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/embed_documents.h"

namespace ebb {
class Model;
}

namespace ebb::bench {

class EmbedWorkload final : public Workload {
 public:
  // `name`: the report's label, e.g. "ebb:embed".
  EmbedWorkload(std::string name, const BenchOptions& options, const EmbedDocuments& documents);
  ~EmbedWorkload() override;

  std::string name() const override { return name_; }
  std::string engine() const override { return "ebb"; }
  std::string scenario() const override { return "embed"; }
  double Setup() override;
  // Throws ebb::Error: the model is not an encoder (FailedPrecondition), a bad embed.* option.
  RequestTiming RunIteration(int32_t index) override;
  KvSample Kv() const override;  // the encoder's KV pool: 0 bytes
  ArenaSample Arena() const override;
  void Shrink() override;  // Model::runtime().ShrinkArena()
  void Teardown() override;

 private:
  std::string name_;
  const BenchOptions& options_;      // not owned
  const EmbedDocuments& documents_;  // not owned
  std::shared_ptr<Model> model_;
};

}  // namespace ebb::bench
