#include "bench/report_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "ebb/error.h"

namespace ebb::bench {
namespace {

using json = nlohmann::ordered_json;

json Opt(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }
json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json Memory(const MemorySample& m) {
  return {{"rss_bytes", m.rss_bytes},
          {"anon_bytes", m.anon_bytes},
          {"kv_in_use_bytes", Opt(m.kv.in_use_bytes)},
          {"kv_reserved_bytes", Opt(m.kv.reserved_bytes)},
          {"arena_in_use_bytes", Opt(m.arena.in_use_bytes)},
          {"arena_total_allocated_bytes", Opt(m.arena.total_allocated_bytes)},
          {"prefix_cache_bytes", Opt(m.kv.prefix_cache_bytes)},
          {"device_kv_in_use_bytes", Opt(m.device.kv_in_use_bytes)},
          {"device_kv_reserved_bytes", Opt(m.device.kv_reserved_bytes)},
          {"device_used_bytes", Opt(m.device.used_bytes)},
          {"device_driver_process_bytes", Opt(m.device.driver_process_bytes)}};
}

json FirstLoad(const std::optional<WeightsMemory>& w) {
  if (!w) return nullptr;
  return {{"load_ms", w->load_ms},
          {"load_peak_anon_bytes", w->load_peak_anon_bytes},
          {"cache", w->cache},
          {"cache_build_peak_anon_bytes", w->cache_build_peak_anon_bytes}};
}

json PrefixCache(const std::optional<PrefixCacheStats>& p) {
  if (!p) return nullptr;
  return {{"max_bytes", p->max_bytes},
          {"bytes", p->bytes},
          {"blocks", p->blocks},
          {"block_tokens", p->block_tokens},
          {"hits", p->hits},
          {"misses", p->misses},
          {"tokens_reused", p->tokens_reused},
          {"tokens_stored", p->tokens_stored},
          {"evicted_blocks", p->evicted_blocks},
          {"reclaimed_blocks", p->reclaimed_blocks}};
}

json Stat(const Summary& s) {
  return {{"n", s.n},     {"mean", s.mean}, {"stddev", s.stddev}, {"p50", s.p50},
          {"p90", s.p90}, {"min", s.min},   {"max", s.max}};
}

json Fit(const LinearFit& f) {
  return {{"bytes_per_iteration", f.slope},
          {"stderr_bytes_per_iteration", f.slope_stderr},
          {"intercept_bytes", f.intercept},
          {"n", f.n}};
}

json Fit(const std::optional<LinearFit>& f) { return f ? Fit(*f) : json(nullptr); }

json Steps(const StepCount& s) {
  return {{"changed", s.changed},
          {"intervals", s.intervals},
          {"largest_step_bytes", s.largest_step_bytes}};
}

json DeviceInfoJson(const std::optional<DeviceInfo>& d) {
  if (!d) return nullptr;
  return {{"device", d->device},
          {"adapter", d->adapter},
          {"cache_mode", d->cache_mode},
          {"weights_bytes", d->weights_bytes},
          {"limit_bytes", d->limit_bytes}};
}

json DeviceSummaryJson(const RunResult& r) {
  const auto& d = r.summary.device;
  if (!d) return nullptr;
  const std::optional<bool> back = DeviceKvBackToZero(r);
  return {{"iterations", d->iterations},
          {"kv_zero_after", d->kv_zero_after},
          {"kv_back_to_zero", back ? json(*back) : json(nullptr)},
          {"max_kv_in_use_after_bytes", d->max_kv_in_use_after_bytes},
          {"peak_kv_in_use_bytes", d->peak_kv_in_use_bytes},
          {"peak_used_bytes", d->peak_used_bytes},
          {"peak_driver_process_bytes", Opt(d->peak_driver_process_bytes)},
          {"slopes",
           {{"used_after", Fit(d->used_slope)},
            {"driver_process_after", Fit(d->driver_process_slope)}}},
          {"used_after_steps", Steps(d->used_steps)},
          {"driver_process_after_steps",
           d->driver_process_steps ? Steps(*d->driver_process_steps) : json(nullptr)}};
}

json Embed(const std::optional<EmbedSummary>& e) {
  if (!e) return nullptr;
  return {{"texts", e->texts},
          {"tokens", e->tokens},
          {"padded_tokens", e->padded_tokens},
          {"seconds", e->seconds},
          {"texts_per_s", e->texts_per_s},
          {"tokens_per_s", e->tokens_per_s},
          {"tokens_per_s_per_request", Stat(e->tokens_per_s_per_request)}};
}

json Run(const RunResult& r) {
  json its = json::array();
  for (const auto& it : r.iterations) {
    its.push_back({{"index", it.index},
                   {"warmup", it.warmup},
                   {"prompt_tokens", it.timing.prompt_tokens},
                   {"generated_tokens", it.timing.generated_tokens},
                   {"ttft_s", it.timing.ttft_s},
                   {"tps", it.timing.tps},
                   {"e2e_s", it.timing.e2e_s},
                   {"load_s", Opt(it.timing.load_s)},
                   {"texts", it.timing.texts},
                   {"padded_tokens", it.timing.padded_tokens},
                   {"cached_tokens", it.timing.cached_tokens},
                   {"constraint_ms", it.timing.constraint_ms},
                   {"forced_tokens", it.timing.forced_tokens},
                   {"memory_before", Memory(it.before)},
                   {"memory_last_token", Memory(it.last_token)},
                   {"memory_after", Memory(it.after)},
                   {"peak_rss_bytes", it.peak_rss_bytes}});
  }
  const RunSummary& s = r.summary;
  json summary = {
      {"measured_iterations", s.measured_iterations},
      {"ttft_s", Stat(s.ttft_s)},
      {"tps", Stat(s.tps)},
      {"e2e_s", Stat(s.e2e_s)},
      {"constraint_ms_per_token",
       s.constraint_ms_per_token ? Stat(*s.constraint_ms_per_token) : json(nullptr)},
      {"constraint_share", s.constraint_share ? Stat(*s.constraint_share) : json(nullptr)},
      {"peak_rss_bytes", s.peak_rss_bytes},
      {"peak_anon_bytes", s.peak_anon_bytes},
      {"peak_kv_reserved_bytes", Opt(s.peak_kv_reserved_bytes)},
      {"slopes",
       {{"rss_after", Fit(s.rss_slope)},
        {"anon_after", Fit(s.anon_slope)},
        {"kv_reserved_after", Fit(s.kv_reserved_slope)},
        {"arena_total_allocated_after", Fit(s.arena_total_slope)}}},
      {"rss_after_steps", Steps(s.rss_steps)},
      {"embed", Embed(s.embed)},
      {"device", DeviceSummaryJson(r)}};
  return {{"name", r.name},
          {"engine", r.engine},
          {"scenario", r.scenario},
          {"shrink_every", r.shrink_every},
          {"overrides", r.overrides},
          {"setup_s", r.setup_s},
          {"peak_rss_reset", r.peak_rss_reset},
          {"iterations", its},
          {"summary", summary},
          {"prefix_cache", PrefixCache(r.prefix_cache)},
          {"first_load", FirstLoad(r.first_load)},
          {"device", DeviceInfoJson(r.device)}};
}

double Ratio(double a, double b) { return b != 0 ? a / b : 0; }

}  // namespace

json ReportJson(const Environment& env, const BenchOptions& o, const std::vector<RunResult>& runs) {
  json session = json::object();
  for (const auto& [k, v] : o.model_options.session_options) session[k] = v;
  json options = {
      {"model_dir", o.model_dir.string()},
      {"scenario", o.scenario},
      {"iterations", o.iterations},
      {"warmup", o.warmup},
      {"process_warmup", o.process_warmup},
      {"delay_s", o.delay_s},
      {"prompt_tokens", o.prompt_file.empty() ? json(o.prompt_tokens) : json(nullptr)},
      {"prompt_file", o.prompt_file.empty() ? json(nullptr) : json(o.prompt_file.string())},
      {"prefix_tokens", o.UsesRagPrefix() ? json(o.prefix_tokens) : json(nullptr)},
      {"question_tokens", o.UsesRagPrefix() ? json(o.question_tokens) : json(nullptr)},
      {"gen_tokens", o.gen_tokens},
      {"batch", o.batch},
      {"kv_cache", o.kv_mode ? json(std::string(KvModeName(*o.kv_mode))) : json(nullptr)},
      {"session_options", session},
      {"option_flags", o.option_flags},
      {"shrink_every", o.shrink_every},
      {"compare", o.compare}};
  json jruns = json::array();
  for (const auto& r : runs) jruns.push_back(Run(r));
  // Ratios of every run against the first (the --scenario run): >1 means larger.
  json comparison = json::array();
  for (size_t i = 1; i < runs.size(); ++i) {
    const RunSummary& a = runs[i].summary;
    const RunSummary& b = runs[0].summary;
    comparison.push_back(
        {{"run", runs[i].name},
         {"baseline", runs[0].name},
         {"ttft_p50_ratio", Ratio(a.ttft_s.p50, b.ttft_s.p50)},
         {"tps_p50_ratio", Ratio(a.tps.p50, b.tps.p50)},
         {"e2e_p50_ratio", Ratio(a.e2e_s.p50, b.e2e_s.p50)},
         {"peak_rss_ratio",
          Ratio(static_cast<double>(a.peak_rss_bytes), static_cast<double>(b.peak_rss_bytes))},
         {"rss_slope_difference_bytes_per_iteration", a.rss_slope.slope - b.rss_slope.slope},
         {"texts_per_s_ratio", a.embed && b.embed
                                   ? json(Ratio(a.embed->texts_per_s, b.embed->texts_per_s))
                                   : json(nullptr)},
         {"tokens_per_s_ratio", a.embed && b.embed
                                    ? json(Ratio(a.embed->tokens_per_s, b.embed->tokens_per_s))
                                    : json(nullptr)}});
  }
  return {{"schema_version", kBenchSchemaVersion},
          {"tool", "ebb bench"},
          {"environment",
           {{"cpu_model", env.cpu_model},
            {"num_cores", env.num_cores},
            {"os", env.os},
            {"ort_version", env.ort_version},
            {"cpu_kernels", env.cpu_kernels},
            {"ebb_version", env.ebb_version},
            {"ebb_git_commit", env.ebb_git_commit},
            {"created_utc", env.created_utc}}},
          {"options", options},
          {"runs", jruns},
          {"comparison", comparison}};
}

void WriteTextFile(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (!out) {
    throw Error(ErrorCode::InvalidArgument, "cannot write " + flag + " '" + path +
                                                "': " + std::strerror(errno) +
                                                "; give a path in a writable folder");
  }
}

}  // namespace ebb::bench
