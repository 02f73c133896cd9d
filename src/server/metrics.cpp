#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ebb/error.h"
#include "ebb/version.h"
#include "server/admission.h"

namespace ebb::server {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// Writes families one at a time: HELP and TYPE once, then the samples.
class Writer {
 public:
  void Family(const std::string& name, const std::string& type, const std::string& help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& name, const std::string& labels, double value) {
    out_ << name;
    if (!labels.empty()) out_ << "{" << labels << "}";
    out_ << " " << Num(value) << "\n";
  }
  void Hist(const std::string& name, const std::string& labels, const Histogram& h) {
    uint64_t cum = 0;
    const std::string sep = labels.empty() ? "" : labels + ",";
    for (size_t i = 0; i < h.upper.size(); ++i) {
      cum += h.counts[i];
      Sample(name + "_bucket", sep + "le=\"" + Num(h.upper[i]) + "\"", static_cast<double>(cum));
    }
    Sample(name + "_bucket", sep + "le=\"+Inf\"", static_cast<double>(h.count));
    Sample(name + "_sum", labels, h.sum);
    Sample(name + "_count", labels, static_cast<double>(h.count));
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string L(const std::string& model) { return "model=\"" + Escape(model) + "\""; }

// A KV budget: bytes in use plus the room left before a refusal (kv_cache.max_bytes, or the
// memory.limit headroom, whichever is hit first). budget 0: nothing bounds it.
struct KvBudget {
  uint64_t in_use = 0;
  uint64_t budget = 0;
  double ratio() const {
    return budget == 0 ? 0.0 : static_cast<double>(in_use) / static_cast<double>(budget);
  }
};

// The device families (docs/metrics.md "On a device"): HELP and TYPE always, as every family
// here; samples for the loaded models whose KV is on a device, and the driver's figures when
// NVML reported them (read from the first such model: they are the process's, not a model's).
void DeviceFamilies(Writer& w, const std::vector<ManagedModel>& list) {
  std::vector<std::pair<std::string, const DeviceMemory*>> devices;
  for (const auto& m : list) {
    if (m.summary && m.summary->device.available) devices.emplace_back(m.id, &m.summary->device);
  }
  w.Family("ebb_device_memory_bytes", "gauge",
           "A loaded model's accelerator memory: weights, kv_in_use, kv_peak, retained (freed "
           "KV buffers kept for reuse), ort_cache (ORT's buffer cache; absent when not "
           "countable), used (what gpu_mem_limit counts), limit (gpu_mem_limit; absent "
           "without one), driver_process (the whole process's GPU memory as the NVIDIA driver "
           "reports it: the same on every model; absent without NVML).");
  for (const auto& [id, d] : devices) {
    const std::string labels = L(id) + ",device=\"" + Escape(d->device) + "\",kind=\"";
    const auto sample = [&](const char* kind, double value) {
      w.Sample("ebb_device_memory_bytes", labels + kind + "\"", value);
    };
    sample("weights", static_cast<double>(d->weights_bytes));
    sample("kv_in_use", static_cast<double>(d->kv.in_use_bytes));
    sample("kv_peak", static_cast<double>(d->kv.peak_in_use_bytes));
    sample("retained", static_cast<double>(d->kv.retained_bytes));
    if (d->ort_cache_bytes >= 0) sample("ort_cache", static_cast<double>(d->ort_cache_bytes));
    sample("used", static_cast<double>(d->used_bytes));
    if (d->limit_bytes > 0) sample("limit", static_cast<double>(d->limit_bytes));
    if (d->driver_process_bytes >= 0) {
      sample("driver_process", static_cast<double>(d->driver_process_bytes));
    }
  }
  int64_t driver_used = -1;
  int64_t driver_total = -1;
  for (const auto& [id, d] : devices) {
    if (driver_used < 0) driver_used = d->driver_used_bytes;
    if (driver_total < 0) driver_total = d->driver_total_bytes;
  }
  w.Family("ebb_device_driver_used_bytes", "gauge",
           "Used memory of the GPUs as the NVIDIA driver reports it (NVML, summed over devices, "
           "every process's); absent without NVML or a model on a device.");
  if (driver_used >= 0) {
    w.Sample("ebb_device_driver_used_bytes", "", static_cast<double>(driver_used));
  }
  w.Family("ebb_device_driver_total_bytes", "gauge",
           "Memory of the GPUs as the NVIDIA driver reports it (NVML, summed over devices); "
           "absent without NVML or a model on a device.");
  if (driver_total >= 0) {
    w.Sample("ebb_device_driver_total_bytes", "", static_cast<double>(driver_total));
  }
}

}  // namespace

std::string RenderDeviceMetrics(const std::vector<ManagedModel>& models) {
  Writer w;
  DeviceFamilies(w, models);
  return w.str();
}

void Histogram::Observe(double value) {
  for (size_t i = 0; i < upper.size(); ++i) {
    if (value <= upper[i]) {
      ++counts[i];
      break;
    }
  }
  ++count;
  sum += value;
}

void Metrics::OnRequestStart(const RequestStart& start) {
  MutexLock lock(mu_);
  models_[start.model_id];
  ++in_flight_;
}

void Metrics::OnRequestEnd(const RequestEnd& end) {
  MutexLock lock(mu_);
  --in_flight_;
  PerModel& m = models_[end.model_id];
  ++m.outcomes[static_cast<size_t>(end.outcome)];
  m.prompt_tokens += end.prompt_tokens;
  m.generated_tokens += end.generated_tokens;
  if (end.ttft_ms >= 0) m.ttft.Observe(end.ttft_ms / 1e3);
  if (end.generated_tokens > 1 && end.ttft_ms >= 0) {
    m.tpot.Observe((end.duration_ms - end.ttft_ms) / 1e3 /
                   static_cast<double>(end.generated_tokens - 1));
  }
  m.duration.Observe(end.duration_ms / 1e3);
}

void Metrics::OnHttpResponse(const std::string& route, int status) {
  MutexLock lock(mu_);
  ++http_[{route, status}];
}

void Metrics::OnRefused(const std::string& route, int status) {
  MutexLock lock(mu_);
  ++refused_[{route, status}];
}

void Metrics::OnStreamError(const std::string& route, int status) {
  MutexLock lock(mu_);
  ++stream_errors_[{route, status}];
}

void Metrics::OnManagerEvent(ManagerEvent event, const std::string& /*model*/) {
  MutexLock lock(mu_);
  ++events_[std::string(ManagerEventName(event))];
}

void Metrics::OnCachedTokens(const std::string& model, uint64_t cached_tokens) {
  MutexLock lock(mu_);
  models_[model].cached_tokens += cached_tokens;
}

uint64_t Metrics::requests(RequestOutcome outcome) const {
  MutexLock lock(mu_);
  uint64_t n = 0;
  for (const auto& [id, m] : models_) n += m.outcomes[static_cast<size_t>(outcome)];
  return n;
}

std::map<std::string, Metrics::Usage> Metrics::usage() const {
  MutexLock lock(mu_);
  std::map<std::string, Usage> out;
  for (const auto& [id, m] : models_) {
    Usage& u = out[id];
    for (uint64_t n : m.outcomes) u.requests += n;
    u.prompt_tokens = m.prompt_tokens;
    u.generated_tokens = m.generated_tokens;
    u.cached_tokens = m.cached_tokens;
  }
  return out;
}

std::string Metrics::Render(const Runtime& runtime, const ModelManager& manager,
                            const Admission& admission) const {
  Writer w;
  w.Family("ebb_build_info", "gauge", "ebb's version and the ONNX Runtime it runs on (always 1).");
  w.Sample("ebb_build_info",
           "version=\"" + Escape(Version()) + "\",onnxruntime=\"" + Escape(OrtVersion()) + "\"", 1);

  const MemoryStats rs = runtime.Stats();
  w.Family("ebb_process_resident_memory_bytes", "gauge", "Resident set size of the process.");
  w.Sample("ebb_process_resident_memory_bytes", "", static_cast<double>(rs.process.rss_bytes));
  w.Family("ebb_process_anonymous_memory_bytes", "gauge",
           "Anonymous resident memory plus swap of the process (RssAnon + VmSwap).");
  w.Sample("ebb_process_anonymous_memory_bytes", "", static_cast<double>(rs.process.anon_bytes));
  w.Family("ebb_process_file_memory_bytes", "gauge",
           "File-backed resident memory of the process (RssFile).");
  w.Sample("ebb_process_file_memory_bytes", "", static_cast<double>(rs.process.file_bytes));
  w.Family("ebb_process_peak_resident_memory_bytes", "gauge", "Peak resident set size (VmHWM).");
  w.Sample("ebb_process_peak_resident_memory_bytes", "",
           static_cast<double>(rs.process.peak_rss_bytes));
  w.Family("ebb_memory_limit_bytes", "gauge",
           "memory.limit: the budget for all models' weights and KV (0 = none).");
  w.Sample("ebb_memory_limit_bytes", "", static_cast<double>(rs.limit_bytes));
  w.Family("ebb_memory_used_bytes", "gauge",
           "What memory.limit counts now: weights of loaded models plus KV in use.");
  const uint64_t limit = rs.limit_bytes;
  const uint64_t used = rs.used_bytes;
  w.Sample("ebb_memory_used_bytes", "", static_cast<double>(used));
  const uint64_t headroom = limit > used ? limit - used : 0;
  w.Family("ebb_memory_headroom_bytes", "gauge",
           "memory.limit minus what it counts: the weights and KV that still fit (absent "
           "without a limit).");
  if (limit > 0) w.Sample("ebb_memory_headroom_bytes", "", static_cast<double>(headroom));

  const std::vector<ManagedModel> list = manager.List();
  w.Family("ebb_model_loaded", "gauge", "1 when the model is loaded, 0 when it is only known.");
  for (const auto& m : list) w.Sample("ebb_model_loaded", L(m.id), m.loaded ? 1 : 0);
  w.Family("ebb_model_weights_bytes", "gauge",
           "Bytes of a loaded model's weights as memory.limit charges them (weight files, plus "
           "ebb's anonymous int4 repack).");
  for (const auto& m : list) {
    if (m.summary) w.Sample("ebb_model_weights_bytes", L(m.id), m.summary->weights_bytes);
  }
  w.Family("ebb_model_weights_memory_bytes", "gauge",
           "A loaded model's weights in memory: anonymous (ORT's own copies, which the OS cannot "
           "drop) and file_resident (resident pages of a compiled-model cache entry: "
           "reclaimable, shared between processes).");
  for (const auto& m : list) {
    if (!m.summary) continue;
    const auto& wm = m.summary->weights;
    w.Sample("ebb_model_weights_memory_bytes", L(m.id) + ",kind=\"anonymous\"", wm.anon_bytes);
    w.Sample("ebb_model_weights_memory_bytes", L(m.id) + ",kind=\"file_resident\"",
             wm.file_resident_bytes);
  }
  w.Family("ebb_model_weights_released", "gauge",
           "1 when a loaded model's file-backed weights were released (release_weights); the "
           "next request reads them back.");
  for (const auto& m : list) {
    if (m.summary) {
      w.Sample("ebb_model_weights_released", L(m.id),
               m.summary->weights.state == WeightsState::kReleased ? 1 : 0);
    }
  }
  w.Family("ebb_model_load_peak_anon_bytes", "gauge",
           "The process's highest anonymous memory while a loaded model's load ran (phase=load), "
           "and while its compiled-model cache entry was built in the background "
           "(phase=cache_build, once the build finished).");
  for (const auto& m : list) {
    if (!m.summary) continue;
    const auto& wm = m.summary->weights;
    w.Sample("ebb_model_load_peak_anon_bytes", L(m.id) + ",phase=\"load\"",
             wm.load_peak_anon_bytes);
    if (wm.cache == "built" || wm.cache == "failed") {
      w.Sample("ebb_model_load_peak_anon_bytes", L(m.id) + ",phase=\"cache_build\"",
               wm.cache_build_peak_anon_bytes);
    }
  }
  w.Family("ebb_model_load_seconds", "gauge", "How long a loaded model's load took.");
  for (const auto& m : list) {
    if (m.summary) {
      w.Sample("ebb_model_load_seconds", L(m.id),
               static_cast<double>(m.summary->weights.load_ms) / 1000.0);
    }
  }
  w.Family("ebb_model_kv_bytes", "gauge",
           "KV cache bytes of a loaded model: in_use (live requests), reserved (held by its "
           "pool), peak (most in use).");
  for (const auto& m : list) {
    if (!m.summary) continue;
    const auto& kv = m.summary->kv;
    w.Sample("ebb_model_kv_bytes", L(m.id) + ",state=\"in_use\"", kv.in_use_bytes);
    w.Sample("ebb_model_kv_bytes", L(m.id) + ",state=\"reserved\"", kv.reserved_bytes);
    w.Sample("ebb_model_kv_bytes", L(m.id) + ",state=\"peak\"", kv.peak_in_use_bytes);
  }
  // The prefix cache of each loaded generation model (docs/metrics.md): gauges of what it holds
  // and counters since the model was loaded (a reload starts them again at 0).
  std::vector<std::pair<std::string, const PrefixCacheStats*>> caches;
  for (const auto& m : list) {
    if (m.summary && !m.summary->is_encoder) caches.emplace_back(m.id, &m.summary->prefix_cache);
  }
  const auto prefix_family = [&](const char* name, const char* type, const char* help,
                                 uint64_t PrefixCacheStats::*field) {
    w.Family(name, type, help);
    for (const auto& [id, c] : caches) w.Sample(name, L(id), static_cast<double>(c->*field));
  };
  prefix_family("ebb_prefix_cache_bytes", "gauge",
                "KV bytes a model's prefix cache holds now (also in ebb_model_kv_bytes in_use).",
                &PrefixCacheStats::bytes);
  prefix_family("ebb_prefix_cache_max_bytes", "gauge",
                "prefix_cache.max_bytes of a model (0 = the prefix cache is off).",
                &PrefixCacheStats::max_bytes);
  prefix_family("ebb_prefix_cache_pinned_bytes", "gauge",
                "Bytes of a model's prefix cache pinned (POST /v1/models/{id}/prefix): never "
                "evicted.",
                &PrefixCacheStats::pinned_bytes);
  prefix_family("ebb_prefix_cache_blocks", "gauge",
                "Blocks a model's prefix cache holds now (block_tokens tokens each).",
                &PrefixCacheStats::blocks);
  prefix_family("ebb_prefix_cache_hits_total", "counter",
                "Requests that started from at least one block of the prefix cache.",
                &PrefixCacheStats::hits);
  prefix_family("ebb_prefix_cache_misses_total", "counter",
                "Requests that looked in the prefix cache and found no block of their prompt.",
                &PrefixCacheStats::misses);
  prefix_family("ebb_prefix_cache_tokens_reused_total", "counter",
                "Prompt tokens taken from the prefix cache instead of prefilled.",
                &PrefixCacheStats::tokens_reused);
  prefix_family("ebb_prefix_cache_evicted_blocks_total", "counter",
                "Prefix cache blocks evicted to make room under prefix_cache.max_bytes.",
                &PrefixCacheStats::evicted_blocks);
  prefix_family("ebb_prefix_cache_reclaimed_blocks_total", "counter",
                "Prefix cache blocks dropped for memory (a KV budget or memory.limit refusal, a "
                "shrink, release_weights, POST .../prefix/drop).",
                &PrefixCacheStats::reclaimed_blocks);
  // The batched decode of each loaded generation model (decode_batch.*): its rows setting, and
  // counters since the model was loaded. steps / rows shows how many requests shared a step.
  w.Family("ebb_decode_batch_max_rows", "gauge",
           "decode_batch.max_rows of a loaded model (1 = off; ebb serve's default is --parallel).");
  for (const auto& m : list) {
    if (m.summary && !m.summary->is_encoder) {
      w.Sample("ebb_decode_batch_max_rows", L(m.id), m.summary->decode_batch.max_rows);
    }
  }
  w.Family("ebb_decode_batch_steps_total", "counter",
           "Batched decode steps (one Run() for the concurrent requests of a model).");
  for (const auto& m : list) {
    if (m.summary && !m.summary->is_encoder) {
      w.Sample("ebb_decode_batch_steps_total", L(m.id),
               static_cast<double>(m.summary->decode_batch.steps));
    }
  }
  w.Family("ebb_decode_batch_rows_total", "counter",
           "Tokens the batched decode steps produced, one per request in each step (divided by "
           "the steps: requests per step).");
  for (const auto& m : list) {
    if (m.summary && !m.summary->is_encoder) {
      w.Sample("ebb_decode_batch_rows_total", L(m.id),
               static_cast<double>(m.summary->decode_batch.rows));
    }
  }

  // KV usage as a ratio of its budget (docs/metrics.md#signals-for-gateways): per model, the
  // budget is what it holds plus the room left under kv_cache.max_bytes and memory.limit's
  // headroom (whichever is smaller); overall, the KV in use plus memory.limit's headroom, else
  // the sum of the models' kv_cache.max_bytes when every loaded generation model has one.
  KvBudget all;
  bool all_bounded = true;
  std::vector<std::pair<std::string, KvBudget>> per_model;
  for (const auto& m : list) {
    if (!m.summary || m.summary->is_encoder) continue;
    const auto& kv = m.summary->kv;
    KvBudget b;
    b.in_use = kv.in_use_bytes;
    bool bounded = false;
    uint64_t room = 0;
    if (kv.max_bytes > 0) {
      room = kv.max_bytes > kv.in_use_bytes ? kv.max_bytes - kv.in_use_bytes : 0;
      bounded = true;
    }
    if (limit > 0) {
      room = bounded ? std::min(room, headroom) : headroom;
      bounded = true;
    }
    if (bounded) b.budget = b.in_use + room;
    if (kv.max_bytes == 0) all_bounded = false;
    all.in_use += b.in_use;
    if (kv.max_bytes > 0) all.budget += kv.max_bytes;
    per_model.emplace_back(m.id, b);
  }
  if (limit > 0) {
    all.budget = all.in_use + headroom;
  } else if (!all_bounded || per_model.empty()) {
    all.budget = 0;
  }
  w.Family("ebb_model_kv_budget_bytes", "gauge",
           "KV bytes a loaded generation model holds plus the room it has left under "
           "kv_cache.max_bytes and memory.limit (0 = unbounded).");
  for (const auto& [id, b] : per_model) {
    w.Sample("ebb_model_kv_budget_bytes", L(id), static_cast<double>(b.budget));
  }
  w.Family("ebb_model_kv_usage_ratio", "gauge",
           "KV in use over ebb_model_kv_budget_bytes, 0 to 1 (0 when unbounded); like "
           "vllm:kv_cache_usage_perc for one model.");
  for (const auto& [id, b] : per_model) w.Sample("ebb_model_kv_usage_ratio", L(id), b.ratio());
  w.Family("ebb_kv_cache_budget_bytes", "gauge",
           "KV in use by all models plus memory.limit's headroom; without a limit the sum of "
           "kv_cache.max_bytes when every loaded generation model has one (0 = unbounded).");
  w.Sample("ebb_kv_cache_budget_bytes", "", static_cast<double>(all.budget));
  w.Family("ebb_kv_cache_usage_ratio", "gauge",
           "KV in use by all models over ebb_kv_cache_budget_bytes, 0 to 1 (0 when unbounded); "
           "what gateways read as vllm:kv_cache_usage_perc.");
  w.Sample("ebb_kv_cache_usage_ratio", "", all.ratio());

  w.Family("ebb_model_arena_bytes", "gauge",
           "ORT CPU arena of a loaded model: in_use and allocated (held from the system).");
  for (const auto& m : list) {
    if (!m.summary || !m.summary->cpu_arena.available) continue;
    const auto& a = m.summary->cpu_arena;
    w.Sample("ebb_model_arena_bytes", L(m.id) + ",state=\"in_use\"",
             static_cast<double>(a.in_use_bytes));
    w.Sample("ebb_model_arena_bytes", L(m.id) + ",state=\"allocated\"",
             static_cast<double>(a.total_allocated_bytes));
  }
  DeviceFamilies(w, list);
  w.Family("ebb_model_running_requests", "gauge", "Requests running on a model now.");
  for (const auto& m : list) w.Sample("ebb_model_running_requests", L(m.id), m.running);
  w.Family("ebb_model_shrinks_total", "counter",
           "Shrinks ebb ran on a model since it was loaded (ShrinkArena and the policies).");
  for (const auto& m : list) {
    if (!m.loaded) continue;
    try {
      w.Sample("ebb_model_shrinks_total", L(m.id),
               static_cast<double>(runtime.Get(m.id)->runtime().Stats().num_shrinks));
    } catch (const Error&) {
      // Unloaded between the list and now.
    }
  }
  w.Family("ebb_model_pinned", "gauge", "1 when the model is pinned (never evicted).");
  for (const auto& m : list) w.Sample("ebb_model_pinned", L(m.id), m.pinned ? 1 : 0);

  MutexLock lock(mu_);
  w.Family("ebb_requests_total", "counter",
           "Finished requests (generations and embedding calls) by model and outcome.");
  for (const auto& [id, m] : models_) {
    for (RequestOutcome o :
         {RequestOutcome::kCompleted, RequestOutcome::kCancelled, RequestOutcome::kError}) {
      w.Sample("ebb_requests_total",
               L(id) + ",outcome=\"" + std::string(RequestOutcomeName(o)) + "\"",
               static_cast<double>(m.outcomes[static_cast<size_t>(o)]));
    }
  }
  w.Family("ebb_prompt_tokens_total", "counter", "Prompt (input) tokens processed, by model.");
  for (const auto& [id, m] : models_) {
    w.Sample("ebb_prompt_tokens_total", L(id), static_cast<double>(m.prompt_tokens));
  }
  w.Family("ebb_generation_tokens_total", "counter", "Tokens generated, by model.");
  for (const auto& [id, m] : models_) {
    w.Sample("ebb_generation_tokens_total", L(id), static_cast<double>(m.generated_tokens));
  }
  w.Family("ebb_time_to_first_token_seconds", "histogram",
           "Time from a request's first Run() to its first token.");
  for (const auto& [id, m] : models_) w.Hist("ebb_time_to_first_token_seconds", L(id), m.ttft);
  w.Family("ebb_time_per_output_token_seconds", "histogram",
           "Mean time per generated token after the first, per request.");
  for (const auto& [id, m] : models_) w.Hist("ebb_time_per_output_token_seconds", L(id), m.tpot);
  w.Family("ebb_request_duration_seconds", "histogram",
           "Time from a request's first Run() to its end.");
  for (const auto& [id, m] : models_) w.Hist("ebb_request_duration_seconds", L(id), m.duration);

  const Readiness ready = admission.Check();
  w.Family("ebb_ready", "gauge",
           "1 when /ready answers 200; 0 while draining or stalled (see /ready for the reason).");
  w.Sample("ebb_ready", "", ready.ready ? 1 : 0);
  w.Family("ebb_draining", "gauge", "1 after SIGTERM, while running requests finish.");
  w.Sample("ebb_draining", "", admission.draining() ? 1 : 0);
  w.Family("ebb_requests_running", "gauge", "Requests holding one of the --parallel slots.");
  w.Sample("ebb_requests_running", "", admission.running());
  w.Family("ebb_queue_depth", "gauge", "Requests waiting for a slot.");
  w.Sample("ebb_queue_depth", "", admission.queued());
  w.Family("ebb_queue_capacity", "gauge", "--max-queue: the most requests that may wait.");
  w.Sample("ebb_queue_capacity", "", admission.max_queue());
  w.Family("ebb_requests_rejected_total", "counter",
           "Requests refused with 429 because the queue was full.");
  w.Sample("ebb_requests_rejected_total", "", static_cast<double>(admission.rejected()));

  auto event = [&](const char* name) EBB_REQUIRES(mu_) -> double {
    auto it = events_.find(name);
    return it == events_.end() ? 0 : static_cast<double>(it->second);
  };
  w.Family("ebb_model_loads_total", "counter", "Models loaded (on first use or by request).");
  w.Sample("ebb_model_loads_total", "", event("loaded"));
  w.Family("ebb_model_evictions_total", "counter",
           "Idle models unloaded to make room under memory.limit (least recently used first).");
  w.Sample("ebb_model_evictions_total", "", event("evicted"));
  w.Family("ebb_model_expirations_total", "counter",
           "Models unloaded because their keep-alive ran out.");
  w.Sample("ebb_model_expirations_total", "", event("expired"));
  w.Family("ebb_model_unloads_total", "counter", "Models unloaded by request.");
  w.Sample("ebb_model_unloads_total", "", event("unloaded"));

  // One sample per (route, status code) of a counter map.
  auto by_route_and_code = [&w](const char* name,
                                const std::map<std::pair<std::string, int>, uint64_t>& counts) {
    for (const auto& [key, n] : counts) {
      w.Sample(name,
               "route=\"" + Escape(key.first) + "\",code=\"" + std::to_string(key.second) + "\"",
               static_cast<double>(n));
    }
  };
  w.Family("ebb_requests_refused_total", "counter",
           "Generation and embedding requests refused before they reached a model (bad field, "
           "queue full, memory budget), by route and status code.");
  by_route_and_code("ebb_requests_refused_total", refused_);
  w.Family("ebb_stream_errors_total", "counter",
           "Streamed responses (sent with status 200) that ended with an error event, by route "
           "and the status code that error carries.");
  by_route_and_code("ebb_stream_errors_total", stream_errors_);
  w.Family("ebb_http_responses_total", "counter", "HTTP responses by route and status code.");
  by_route_and_code("ebb_http_responses_total", http_);
  return w.str();
}

}  // namespace ebb::server
