#include "bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ebb/process_memory.h"
#include "ebb/stats.h"
#include "platform/system_info.h"

namespace ebb::bench {
namespace {

// A figure ReadProcessMemory could not read (-1) counts as 0 in the report.
uint64_t Bytes(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

MemorySample Sample(const Workload& w) {
  const ProcessMemory p = ReadProcessMemory();
  MemorySample m;
  m.rss_bytes = Bytes(p.rss_bytes);
  m.anon_bytes = Bytes(p.anon_bytes);
  Workload::Pools pools = w.SamplePools();
  m.kv = pools.kv;
  m.arena = pools.arena;
  m.device = pools.device;
  return m;
}

// Fits `get(after)` over the measured iterations; nullopt when any value is absent.
std::optional<LinearFit> Slope(
    const std::vector<const IterationRecord*>& measured,
    const std::function<std::optional<uint64_t>(const MemorySample&)>& get) {
  std::vector<double> xs, ys;
  for (const auto* r : measured) {
    const auto v = get(r->after);
    if (!v) return std::nullopt;
    xs.push_back(r->index);
    ys.push_back(static_cast<double>(*v));
  }
  return FitLine(xs, ys);
}

// Counts the intervals between consecutive measured "after" samples in which `get` moved;
// nullopt when any value is absent.
std::optional<StepCount> Steps(
    const std::vector<const IterationRecord*>& measured,
    const std::function<std::optional<uint64_t>(const MemorySample&)>& get) {
  StepCount steps;
  for (size_t i = 0; i < measured.size(); ++i) {
    const auto v = get(measured[i]->after);
    if (!v) return std::nullopt;
    if (i == 0) continue;
    const int64_t d = static_cast<int64_t>(*v) - static_cast<int64_t>(*get(measured[i - 1]->after));
    ++steps.intervals;
    if (d == 0) continue;
    ++steps.changed;
    if (std::llabs(d) > std::llabs(steps.largest_step_bytes)) steps.largest_step_bytes = d;
  }
  return steps;
}

// The device figures of a run whose every measured "after" sample has them, else nullopt.
std::optional<DeviceSummary> SummarizeDevice(const std::vector<IterationRecord>& iterations,
                                             const std::vector<const IterationRecord*>& measured) {
  if (measured.empty()) return std::nullopt;
  for (const auto* r : measured) {
    if (!r->after.device.kv_in_use_bytes || !r->after.device.used_bytes) return std::nullopt;
  }
  DeviceSummary d;
  for (const auto& r : iterations) {
    for (const MemorySample* m : {&r.before, &r.last_token, &r.after}) {
      d.peak_kv_in_use_bytes =
          std::max(d.peak_kv_in_use_bytes, m->device.kv_in_use_bytes.value_or(0));
      d.peak_used_bytes = std::max(d.peak_used_bytes, m->device.used_bytes.value_or(0));
      if (m->device.driver_process_bytes) {
        d.peak_driver_process_bytes =
            std::max(d.peak_driver_process_bytes.value_or(0), *m->device.driver_process_bytes);
      }
    }
  }
  for (const auto* r : measured) {
    ++d.iterations;
    const uint64_t kv = *r->after.device.kv_in_use_bytes;
    if (kv == 0) ++d.kv_zero_after;
    d.max_kv_in_use_after_bytes = std::max(d.max_kv_in_use_after_bytes, kv);
  }
  const auto used = [](const MemorySample& m) { return m.device.used_bytes; };
  const auto driver = [](const MemorySample& m) { return m.device.driver_process_bytes; };
  d.used_slope = *Slope(measured, used);
  d.used_steps = *Steps(measured, used);
  d.driver_process_slope = Slope(measured, driver);
  d.driver_process_steps = Steps(measured, driver);
  return d;
}

}  // namespace

std::optional<bool> DeviceKvBackToZero(const RunResult& run) {
  const auto& d = run.summary.device;
  if (!d || run.scenario == "reuse") return std::nullopt;
  return d->kv_zero_after == d->iterations;
}

RunSummary SummarizeRun(const std::vector<IterationRecord>& iterations) {
  RunSummary s;
  std::vector<const IterationRecord*> measured;
  std::vector<double> ttft, tps, e2e;
  for (const auto& r : iterations) {
    s.peak_rss_bytes = std::max(s.peak_rss_bytes, r.peak_rss_bytes);
    for (const MemorySample* m : {&r.before, &r.last_token, &r.after}) {
      s.peak_rss_bytes = std::max(s.peak_rss_bytes, m->rss_bytes);
      s.peak_anon_bytes = std::max(s.peak_anon_bytes, m->anon_bytes);
      if (m->kv.reserved_bytes) {
        s.peak_kv_reserved_bytes =
            std::max(s.peak_kv_reserved_bytes.value_or(0), *m->kv.reserved_bytes);
      }
    }
    if (r.warmup) continue;
    measured.push_back(&r);
    ttft.push_back(r.timing.ttft_s);
    tps.push_back(r.timing.tps);
    e2e.push_back(r.timing.e2e_s);
  }
  s.measured_iterations = static_cast<int32_t>(measured.size());
  std::vector<double> token_rates;
  EmbedSummary e;
  for (const auto* r : measured) {
    if (r->timing.texts <= 0) continue;
    e.texts += r->timing.texts;
    e.tokens += r->timing.prompt_tokens;
    e.padded_tokens += r->timing.padded_tokens;
    e.seconds += r->timing.e2e_s;
    if (r->timing.e2e_s > 0) token_rates.push_back(r->timing.prompt_tokens / r->timing.e2e_s);
  }
  if (e.texts > 0) {
    e.texts_per_s = e.seconds > 0 ? static_cast<double>(e.texts) / e.seconds : 0;
    e.tokens_per_s = e.seconds > 0 ? static_cast<double>(e.tokens) / e.seconds : 0;
    e.tokens_per_s_per_request = ebb::bench::Summarize(token_rates);
    s.embed = e;
  }
  std::vector<double> c_ms, c_share;
  for (const auto* r : measured) {
    const RequestTiming& t = r->timing;
    if (t.constraint_ms <= 0 || t.generated_tokens <= 0) continue;
    const double per_token = t.constraint_ms / t.generated_tokens;
    c_ms.push_back(per_token);
    // The time of one output token: e2e minus the prompt (ttft) over the tokens after the first.
    if (t.generated_tokens > 1 && t.e2e_s > t.ttft_s) {
      const double step_ms = (t.e2e_s - t.ttft_s) * 1e3 / (t.generated_tokens - 1);
      if (step_ms > 0) c_share.push_back(per_token / step_ms);
    }
  }
  if (!c_ms.empty()) s.constraint_ms_per_token = ebb::bench::Summarize(c_ms);
  if (!c_share.empty()) s.constraint_share = ebb::bench::Summarize(c_share);
  s.ttft_s = ebb::bench::Summarize(ttft);
  s.tps = ebb::bench::Summarize(tps);
  s.e2e_s = ebb::bench::Summarize(e2e);
  const auto rss = [](const MemorySample& m) -> std::optional<uint64_t> { return m.rss_bytes; };
  s.rss_slope = *Slope(measured, rss);
  s.rss_steps = *Steps(measured, rss);
  s.anon_slope = *Slope(measured, [](const MemorySample& m) { return m.anon_bytes; });
  s.kv_reserved_slope = Slope(measured, [](const MemorySample& m) { return m.kv.reserved_bytes; });
  s.arena_total_slope =
      Slope(measured, [](const MemorySample& m) { return m.arena.total_allocated_bytes; });
  s.device = SummarizeDevice(iterations, measured);
  return s;
}

void RunProcessWarmup(Workload& workload, int32_t iterations,
                      const std::function<void(int32_t done, int32_t total)>& progress) {
  try {
    workload.Setup();
    for (int32_t i = 0; i < iterations; ++i) {
      workload.RunIteration(i);
      if (progress) progress(i + 1, iterations);
    }
  } catch (...) {
    workload.Teardown();
    throw;
  }
  workload.Teardown();
}

RunResult RunWorkload(Workload& workload, const BenchOptions& options, const ProgressFn& progress) {
  RunResult run;
  run.shrink_every = options.shrink_every;
  run.name = workload.name();
  run.engine = workload.engine();
  run.scenario = workload.scenario();
  const int32_t total = options.warmup + options.iterations;
  // Every record is allocated and written (zeroed) up front, before the first sample, so that
  // the run's own bookkeeping never shows in its RSS: a vector that doubles as the run goes
  // stepped at iterations 9, 17, 33, 65, ...; a reserved one still faulted in one fresh page every
  // 4096 / sizeof(IterationRecord) = 13 records (+300 B per iteration, in every run, seen before
  // this line).
  run.iterations.resize(static_cast<size_t>(total));
  try {
    run.setup_s = workload.Setup();
    for (int32_t i = 0; i < total; ++i) {
      if (i > 0 && options.delay_s > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options.delay_s));
      }
      IterationRecord& rec = run.iterations[static_cast<size_t>(i)];
      rec.index = i;
      rec.warmup = i < options.warmup;
      rec.before = Sample(workload);
      workload.SetLastTokenHook([&rec, &workload] { rec.last_token = Sample(workload); });
      run.peak_rss_reset = platform::ResetPeakRss() && (i == 0 || run.peak_rss_reset);
      rec.timing = workload.RunIteration(i);
      if (options.shrink_every > 0 && (i + 1) % options.shrink_every == 0) workload.Shrink();
      rec.after = Sample(workload);
      // The kernel's RSS counters lag a little (per-thread caches), so the peak is at least what
      // the samples saw.
      rec.peak_rss_bytes =
          std::max({Bytes(ReadProcessMemory().peak_rss_bytes), rec.before.rss_bytes,
                    rec.last_token.rss_bytes, rec.after.rss_bytes});
      workload.SetLastTokenHook({});
      if (progress) progress(run, i + 1, total);
    }
    run.prefix_cache = workload.PrefixCacheSample();
    run.first_load = workload.FirstLoad();
    run.device = workload.Device();
  } catch (...) {
    workload.Teardown();
    throw;
  }
  workload.Teardown();
  run.summary = SummarizeRun(run.iterations);
  return run;
}

}  // namespace ebb::bench
