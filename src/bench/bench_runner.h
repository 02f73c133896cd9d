// Runs one Workload for `warmup + iterations` requests and records, per iteration, the request's
// timings and memory before and after it (process RSS and anonymous memory, the workload's KV and
// arena figures); then summarises the measured (post-warm-up) iterations.
//
// Units: seconds, bytes, tokens per second. Memory "before" is sampled right before the request
// starts, "last_token" when its last token is available (generator still alive), "after" once the
// request is over and its per-request objects are destroyed (the generator; in load-unload, the
// model), after any --shrink-every action. Errors: whatever the workload throws (ebb::Error)
// propagates; the workload is torn down first.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/arena_stats.h"
#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/stats_math.h"

namespace ebb::bench {

struct MemorySample {
  uint64_t rss_bytes = 0;
  uint64_t anon_bytes = 0;  // RssAnon + VmSwap
  KvSample kv;
  ArenaSample arena;
  DeviceSample device;  // the accelerator's figures; absent on the CPU
};

struct IterationRecord {
  int32_t index = 0;  // 0-based over all iterations, warm-up first
  bool warmup = false;
  RequestTiming timing;
  MemorySample before, after;
  MemorySample last_token;  // when the last token is available, the request's objects alive
  // VmHWM read after the iteration, reset before it (RunResult::peak_rss_reset): the iteration's
  // peak RSS. Without the reset, the process's peak so far.
  uint64_t peak_rss_bytes = 0;
};

// How RSS after each request moved between consecutive measured iterations. A leak moves it at
// (nearly) every request; a heap settling moves it in a few discrete steps. Telling the two apart
// is what a slope and its standard error alone cannot do: a single page step gives a small slope
// with an even smaller standard error.
struct StepCount {
  int32_t changed = 0;             // intervals in which RSS after changed
  int32_t intervals = 0;           // consecutive measured pairs: measured iterations - 1
  int64_t largest_step_bytes = 0;  // the change largest in magnitude, signed; 0 when none
};

// Throughput of an embed run over its measured iterations: totals, and rates as totals over the
// summed request times (texts / seconds, real tokens / seconds), which weighs every token the
// same whatever its request's size; plus the spread of the per-request token rates.
struct EmbedSummary {
  int64_t texts = 0;
  int64_t tokens = 0;         // real (unpadded) tokens
  int64_t padded_tokens = 0;  // tokens computed, padding included
  double seconds = 0;         // sum of the requests' e2e_s
  double texts_per_s = 0;
  double tokens_per_s = 0;
  Summary tokens_per_s_per_request;
};

// The accelerator's figures over a run (ebb runs with the KV on a device): whether the device KV
// went back to 0 after every request, and how the device's used bytes (ebb's accounting) and the
// driver's figure for the process (NVML) moved, fitted and counted as RSS is.
struct DeviceSummary {
  int32_t iterations = 0;     // measured iterations (every one has a device "after" sample)
  int32_t kv_zero_after = 0;  // of them, those with no device KV in use after the request
  uint64_t max_kv_in_use_after_bytes = 0;  // the most KV in use after a measured request
  uint64_t peak_kv_in_use_bytes = 0;       // over every sample of the run, warm-up included
  uint64_t peak_used_bytes = 0;            // the same, of used_bytes
  LinearFit used_slope;                    // used_bytes "after", as rss_slope
  StepCount used_steps;
  std::optional<LinearFit> driver_process_slope;  // absent where the driver reports nothing
  std::optional<StepCount> driver_process_steps;
  std::optional<uint64_t> peak_driver_process_bytes;
};

struct RunSummary {
  int32_t measured_iterations = 0;
  Summary ttft_s, tps, e2e_s;
  // Constrained runs (RequestTiming::constraint_ms > 0): per request, the constraint's time per
  // generated token (ms) and its share of the time per output token (decode step + mask).
  std::optional<Summary> constraint_ms_per_token, constraint_share;
  uint64_t peak_rss_bytes = 0;   // max RSS over the samples and iteration peaks (warm-up incl.)
  uint64_t peak_anon_bytes = 0;  // max anonymous memory over the run's samples
  std::optional<uint64_t> peak_kv_reserved_bytes;
  // Least squares over the measured iterations of the "after" samples against the iteration
  // index: bytes per iteration, with the slope's standard error.
  LinearFit rss_slope, anon_slope;
  StepCount rss_steps;  // of the same "after" samples as rss_slope
  std::optional<LinearFit> kv_reserved_slope;
  std::optional<LinearFit> arena_total_slope;
  std::optional<EmbedSummary> embed;  // runs whose requests embed texts (RequestTiming::texts)
  // Runs whose every measured "after" sample has device figures (the KV on an accelerator).
  std::optional<DeviceSummary> device;
};

struct RunResult {
  std::string name;                    // e.g. "ebb:seed-loop", "naive-ort", "recycle:5"
  std::string engine;                  // "ebb" | "naive-ort"
  std::string scenario;                // e.g. "seed-loop", "recycle:5"
  int32_t shrink_every = 0;            // the run's --shrink-every (a spec's shrink-every=N wins)
  std::vector<std::string> overrides;  // the spec's KEY=VALUE option overrides, in order
  double setup_s = 0;                  // model/session load before the first iteration
  bool peak_rss_reset = false;  // VmHWM was reset before every iteration (per-iteration peaks)
  std::vector<IterationRecord> iterations;
  RunSummary summary;
  // The model's prefix cache after the last iteration (Workload::PrefixCacheSample): hits,
  // misses and tokens reused over every iteration of the run, warm-up included. Absent for
  // workloads without one (naive-ort, embed).
  std::optional<PrefixCacheStats> prefix_cache;
  // The accelerator the run's model ran on (Workload::Device); absent on the CPU.
  std::optional<DeviceInfo> device;
  // The run's first load (Workload::FirstLoad), read after the last iteration.
  std::optional<WeightsMemory> first_load;
};

// Whether the device KV was back to 0 after every measured request: nullopt when the run has no
// device figures, or keeps its generator across requests (reuse), where KV in use after a request
// is the live generator's and not a leak.
std::optional<bool> DeviceKvBackToZero(const RunResult& run);

// Called after each iteration (progress display): `run.iterations[done - 1]` is the record just
// completed (the records after it are allocated but not yet run). `total` counts warm-up
// iterations.
using ProgressFn = std::function<void(const RunResult& run, int32_t done, int32_t total)>;

RunResult RunWorkload(Workload& workload, const BenchOptions& options,
                      const ProgressFn& progress = {});

// --process-warmup: runs `iterations` requests of `workload` and discards them, then tears it
// down. The C heap of a fresh process takes tens of requests to settle (glibc places ORT's tens of
// thousands of small allocations per request a little differently each time and extends the heap a
// few times before every size class has room); without this, the first run in the process is
// charged for that one-off growth and the later runs are not. Throws what the workload throws.
void RunProcessWarmup(Workload& workload, int32_t iterations,
                      const std::function<void(int32_t done, int32_t total)>& progress = {});

// Summarises `run.iterations` (pure; exposed for tests).
RunSummary SummarizeRun(const std::vector<IterationRecord>& iterations);

}  // namespace ebb::bench
