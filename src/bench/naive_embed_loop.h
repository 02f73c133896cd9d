// The `naive-ort` baseline of `ebb bench --scenario embed`: the embedding loop people write by
// hand against the ORT C++ API (the ONNX version of sentence-transformers' encode()). One
// Ort::Session for the run, built with the same session options ebb would use (the folder's
// config plus --session-option); each request's documents are cut, in input order, into
// batches of embed.batch_size rows (32 unless overridden: the same as ebb's default), each batch
// padded to its longest row and run whole; the output token vectors (last_hidden_state, or
// token_embeddings in sentence-transformers' own export) are mean-pooled over the attention mask
// and L2-normalised. No length sorting and no token budget: that is the difference measured.
// token_type_ids, when the graph has it, is fed as zeros. Inputs may be int32 or int64.
// Memory: ORT allocates every output in its arena; the request's vectors are kept until it ends.
// Ownership: owns its session; `options` and `documents` are borrowed and must outlive it.
#pragma once

#include <memory>
#include <string>

#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/embed_documents.h"

namespace ebb::bench {

class NaiveEmbedWorkload final : public Workload {
 public:
  // `name`: the run spec, e.g. "naive-ort".
  NaiveEmbedWorkload(std::string name, const BenchOptions& options,
                     const EmbedDocuments& documents);
  ~NaiveEmbedWorkload() override;

  std::string name() const override { return name_; }
  std::string engine() const override { return "naive-ort"; }
  std::string scenario() const override { return "embed"; }
  // Throws ebb::Error: InvalidArgument for a decoder folder or a graph without the inputs and
  // outputs above.
  double Setup() override;
  RequestTiming RunIteration(int32_t index) override;
  KvSample Kv() const override { return {0, std::nullopt, std::nullopt}; }  // an encoder has no KV
  ArenaSample Arena() const override;
  void Teardown() override;

  // The vectors of the last request, in input order (for tests).
  const std::vector<std::vector<float>>& last_embeddings() const;

 private:
  struct State;
  std::string name_;
  const BenchOptions& options_;      // not owned
  const EmbedDocuments& documents_;  // not owned
  std::unique_ptr<State> state_;
};

}  // namespace ebb::bench
