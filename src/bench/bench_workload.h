// What `ebb bench` measures: a Workload runs one request per iteration (a prompt through prefill
// and decode) and reports its own timings and memory pools; the runner (bench_runner.h) samples
// process memory around each iteration and builds the records.
//
// Units: seconds for times, bytes for memory, tokens per second for rates.
// Ownership: a Workload owns everything it loads (model, session, generators) and frees it in
// Teardown() or its destructor. Not thread-safe; one runner drives one workload at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "bench/arena_stats.h"
#include "ebb/stats.h"

namespace ebb::bench {

// KV memory as the workload accounts for it. Absent where the workload cannot tell.
// prefix_cache_bytes: what the model's prefix cache holds (part of in_use_bytes: its blocks come
// from the KV pool); 0 with the cache off, absent for naive-ort.
struct KvSample {
  std::optional<uint64_t> in_use_bytes;
  std::optional<uint64_t> reserved_bytes;
  std::optional<uint64_t> prefix_cache_bytes;
};

// The accelerator's figures (MemoryStats::device) of a workload whose KV lives on a device (ebb
// runs with --ep webgpu, cuda, ...), sampled like the KV. Every field is absent (nullopt) for a
// workload on the CPU and while no model is loaded (load-unload after the unload).
//   kv_in_use_bytes       DeviceMemory::kv.in_use_bytes: held by live generators (0 once every
//                         generator is destroyed)
//   kv_reserved_bytes     kv.reserved_bytes: in use + retained for reuse (kv_cache.retain_bytes)
//   used_bytes            DeviceMemory::used_bytes: weights + KV in use + retained, what
//                         gpu_mem_limit counts (ebb's accounting, exact)
//   driver_process_bytes  this process's GPU memory as the NVIDIA driver reports it (NVML);
//                         absent where the driver reports none (other vendors, llvmpipe)
struct DeviceSample {
  std::optional<uint64_t> kv_in_use_bytes;
  std::optional<uint64_t> kv_reserved_bytes;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> driver_process_bytes;
};

// Which device a workload's model runs on (DeviceMemory's names), for the report.
struct DeviceInfo {
  std::string device;      // "webgpu:0", "cuda:0"
  std::string adapter;     // "" when unknown
  std::string cache_mode;  // WebGPU's storageBufferCacheMode in force; "" elsewhere
  uint64_t weights_bytes = 0;
  uint64_t limit_bytes = 0;  // gpu_mem_limit; 0 = none
};

// The timings of one request, measured with steady_clock stamps around the token loop:
//   start   the request begins (generator creation, or RewindTo for `reuse`)
//   first   the first generated token is available to the caller
//   last    the last generated token is available
// ttft_s = first - start. tps = (generated_tokens - 1) / (last - first), the MLPerf Client
// definition (tokens after the first, per second, per sequence); 0 when fewer than two tokens.
// e2e_s = last - start. load_s: model load time inside the iteration (load-unload, recycle:K),
// absent when the iteration loaded nothing.
// An embedding request (scenario embed) has no token stream: its one output, the vectors, is
// available at the end, so ttft_s = e2e_s and tps = 0; prompt_tokens counts the real (unpadded)
// tokens of all its texts, `texts` the texts and `padded_tokens` the tokens the encoder computed
// (sum over Run() calls of rows x longest row). texts/s and tokens/s are texts and
// prompt_tokens over e2e_s. cached_tokens: of prompt_tokens, those whose KV the model's prefix
// cache gave (GeneratorStats::cached_tokens; not prefilled); 0 without a cache.
struct RequestTiming {
  int32_t prompt_tokens = 0;     // per sequence (embed: all texts' real tokens)
  int32_t generated_tokens = 0;  // per sequence (row 0)
  double ttft_s = 0;
  double tps = 0;
  double e2e_s = 0;
  std::optional<double> load_s;
  int32_t texts = 0;          // embed only: texts embedded; 0 for generation
  int64_t padded_tokens = 0;  // embed only: tokens fed including padding; 0 for generation
  int64_t cached_tokens = 0;  // prompt tokens taken from the prefix cache (row 0)
  // Constrained runs: time spent on the token masks and following the constraint (all rows),
  // and tokens it forced without a model step; 0 otherwise.
  double constraint_ms = 0;
  int64_t forced_tokens = 0;
};

// Collects the stamps of one request and turns them into a RequestTiming.
class TokenClock {
 public:
  using Clock = std::chrono::steady_clock;
  void Start() { start_ = Clock::now(); }
  // Call once per generated token, right after it is available.
  void Token() {
    last_ = Clock::now();
    if (n_ == 0) first_ = last_;
    ++n_;
  }
  int32_t tokens() const { return n_; }
  RequestTiming Finish(int32_t prompt_tokens) const;

 private:
  Clock::time_point start_{}, first_{}, last_{};
  int32_t n_ = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // A short label for reports, e.g. "ebb:seed-loop", "naive-ort", "recycle:5".
  virtual std::string name() const = 0;
  // "ebb" or "naive-ort".
  virtual std::string engine() const = 0;
  // What stays alive across iterations and what each iteration creates (for the report).
  virtual std::string scenario() const = 0;

  // Loads what lives across iterations (the model, unless the scenario loads per iteration).
  // Returns the seconds it took. Throws ebb::Error.
  virtual double Setup() = 0;
  // Runs request `index` (0-based, warm-up included). Throws ebb::Error.
  virtual RequestTiming RunIteration(int32_t index) = 0;
  // Memory pools the workload can report, sampled between iterations.
  virtual KvSample Kv() const = 0;
  virtual ArenaSample Arena() const { return {}; }  // absent unless the workload can read it
  // Both at once, for the runner's samples: a workload that reads them from one source
  // (ModelControls::Stats(), which reads /proc) reads it once per sample.
  struct Pools {
    KvSample kv;
    ArenaSample arena;
    DeviceSample device;  // absent unless the model runs on an accelerator
  };
  virtual Pools SamplePools() const { return {Kv(), Arena()}; }
  // The model's prefix cache (MemoryStats::prefix_cache): its counters cover every request of
  // the run so far, warm-up included. Absent where the workload has no prefix cache (naive-ort).
  virtual std::optional<PrefixCacheStats> PrefixCacheSample() const { return std::nullopt; }
  // The accelerator the workload's model ran on (the last one loaded, kept after an unload);
  // absent for a workload on the CPU.
  virtual std::optional<DeviceInfo> Device() const { return std::nullopt; }
  // The run's first model load (WeightsMemory's load figures: time, anonymous peak, the cache,
  // and the background cache build's peak once it finished); absent for workloads without an
  // ebb model (naive-ort).
  virtual std::optional<WeightsMemory> FirstLoad() const { return std::nullopt; }
  // --shrink-every: give memory back between iterations. The default calls malloc_trim(0); ebb
  // workloads use Model::runtime().ShrinkArena().
  virtual void Shrink();
  // Frees everything Setup and the iterations left alive.
  virtual void Teardown() = 0;

  // The runner's hook for a memory sample at the end of a request: RunIteration calls
  // AtLastToken() once the last token is available and before it frees the request's objects
  // (generator, presents), outside the timed span.
  void SetLastTokenHook(std::function<void()> hook) { last_token_hook_ = std::move(hook); }
  // An observer of the token stream: RunIteration calls it with the count of tokens generated
  // so far (1, 2, ...) right after each token is available and the workload's own clock has
  // stamped it. It runs inside the timed span, so it must be cheap. Unset by default; the
  // timing test sets it to stamp the same tokens with its own clock.
  void SetTokenHook(std::function<void(int32_t generated)> hook) { token_hook_ = std::move(hook); }

 protected:
  void AtLastToken() {
    if (last_token_hook_) last_token_hook_();
  }
  void AtToken(int32_t generated) {
    if (token_hook_) token_hook_(generated);
  }

 private:
  std::function<void()> last_token_hook_;
  std::function<void(int32_t)> token_hook_;
};

}  // namespace ebb::bench
