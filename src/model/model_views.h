// Narrow views of a loaded model, for the folders above model/ (docs/architecture.md "Model
// views"). ModelImpl (model_impl.h) is private to model/: generate/ and embed/ run a model
// through RunView, runtime/ loads and manages one through model_loader.h and LifecycleView. Each
// view lists everything its users may see; a field not listed here is model/'s business.
//
// A view is a non-owning handle (one pointer): cheap to copy, valid while the Model it was made
// from is alive. Its users keep the model alive (a Generator holds a shared_ptr<Model>).
// Thread-safety: as the members it returns (set at load and read-only after, except where said).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ebb/model.h"
#include "kv/kv_shape.h"
#include "model/genai_config.h"
#include "model/graph_io.h"

namespace ebb {
class Tokenizer;
}

namespace ebb::internal {

class ModelImpl;
class ModelHost;
class KvPool;
class PrefixCache;
class ConstraintCache;
class ShrinkController;
class StepRunner;
class DecodeBatcher;

// What a generator (generate/) or an Embed call (embed/) needs to run the model: its identity
// and configuration, the graph's inputs and outputs, the KV geometry and memory, the step
// runner, the caches, the request hooks, and a slot for its whole life.
class RunView {
 public:
  // `model` must be an ebb-loaded model (every ebb::Model is).
  explicit RunView(Model& model);

  Model& model() const;
  const std::string& id() const;
  const GenaiConfig& config() const;
  const ModelOptions& options() const;  // the load's options
  const ModelInfo& info() const;
  const DecoderIo& io() const;       // decoders
  const EncoderIo& encoder() const;  // encoders (info().is_encoder)
  // One sequence's KV geometry (batch 1); copy it and set `batch`. Zero for encoders.
  const KvShape& kv_shape() const;
  // Whether every attention node's cost follows its rows' valid keys rather than the KV
  // buffer's width (ebb's GroupQueryAttention kernel; ORT's CPU kernel's cost is the width's).
  bool attention_cost_follows_keys() const;
  KvPool& kv_pool() const;               // decoders: where every KV cache's memory comes from
  PrefixCache* prefix_cache() const;     // null: no prefix cache (encoders, or turned off)
  ConstraintCache* constraints() const;  // null for encoders
  const Tokenizer* tokenizer() const;    // null: the folder has no tokenizer.json
  const Ort::MemoryInfo& cpu_memory() const;
  Ort::Session& session() const;     // thread-safe (ORT's Run is); every Run goes through runner()
  StepRunner& runner() const;        // every Run() on the session goes through it
  ModelHost& host() const;           // the runtime: request observers, the memory governor
  ShrinkController& shrink() const;  // the model's run options and shrink policies

  // Slots (ModelImpl's contract): AcquireSlot throws FailedPrecondition once the model was
  // unloaded; `in_call` starts the slot inside a call (Embed). BeginCall throws
  // FailedPrecondition when the model was unloaded while the holder was idle.
  uint64_t AcquireSlot(bool in_call = false) const;
  void ReleaseSlot(uint64_t slot) const noexcept;
  void BeginCall(uint64_t slot) const;
  void EndCall(uint64_t slot, bool request_open) const noexcept;
  void Touch() const;  // a request ended now (the idle clock)

  // decode_batch.max_rows > 1: the model's one batcher of concurrent generators, made by `make`
  // on first use under the model's lock. When `make` throws, batching stays off for the model
  // (every later call returns null) and the exception propagates to this first caller. Freed
  // by the model's Release, after every generator.
  std::shared_ptr<DecodeBatcher> SharedDecodeBatcher(
      const std::function<std::shared_ptr<DecodeBatcher>()>& make) const;
  // The batcher if one was made (tests and benchmarks read its counters); thread-safe.
  std::shared_ptr<DecodeBatcher> decode_batcher() const;
  // A batched step of `rows` generators ran (the model's DecodeBatchStats); thread-safe.
  void CountBatchedStep(int rows) const;

 private:
  ModelImpl* m_;
};

// What the runtime (runtime/) needs to manage a loaded model's life beyond the public Model
// (id(), info(), weights_bytes(), num_live_generators()): its idle clock and its unload.
class LifecycleView {
 public:
  explicit LifecycleView(Model& model);

  int64_t last_used_unix_ms() const;  // thread-safe; 0: no request yet

  // Unload (ModelImpl::Release): refuse new generators and calls, wait for running calls (and,
  // for kWaitForRequests, for open generations on other threads), detach the rest; the memory
  // goes when the last of them is destroyed. kDetach is for destructors. Idempotent.
  enum class Release { kWaitForRequests, kDetach };
  void Unload(Release mode = Release::kWaitForRequests) const;

 private:
  ModelImpl* m_;
};

}  // namespace ebb::internal
