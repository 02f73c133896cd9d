// Metrics: the service's counters and histograms, and their Prometheus text exposition.
//
// Request figures come from the runtime's observers (one generation or one embed call is one
// request, whatever surface started it); memory figures are read from the runtime, the model
// manager and the admission queue at scrape time, so a scrape never shows stale memory.
// Names: the ebb_ prefix, base units (bytes, seconds), _total on counters, no colons.
// Thread-safety: all methods are thread-safe; observers are called on request threads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_annotations.h"
#include "ebb/model_manager.h"
#include "ebb/observer.h"
#include "ebb/runtime.h"

namespace ebb::server {

class Admission;

// A cumulative histogram with fixed upper bounds (seconds).
struct Histogram {
  explicit Histogram(std::vector<double> bounds) : upper(std::move(bounds)), counts(upper.size()) {}
  void Observe(double value);
  std::vector<double> upper;
  std::vector<uint64_t> counts;  // per bucket (not cumulative)
  uint64_t count = 0;
  double sum = 0;
};

// The accelerator families of the exposition (docs/metrics.md "On a device"), as Render writes
// them for these models: ebb_device_memory_bytes{model, device, kind} for each loaded model whose
// ModelSummary::device is available (kinds weights, kv_in_use, kv_peak, retained, used; ort_cache
// when countable (>= 0), limit when gpu_mem_limit is set (> 0), driver_process when NVML reported
// it (>= 0)), and the process-level ebb_device_driver_used_bytes / ebb_device_driver_total_bytes
// (NVML, when reported). HELP and TYPE lines are always written. A pure function of `models`.
std::string RenderDeviceMetrics(const std::vector<ManagedModel>& models);

class Metrics final : public RequestObserver {
 public:
  void OnRequestStart(const RequestStart& start) override;
  void OnRequestEnd(const RequestEnd& end) override;
  // An HTTP response: route pattern (e.g. "/v1/chat/completions") and status.
  void OnHttpResponse(const std::string& route, int status);
  // A generation or embedding request answered with an error before it reached a model (the
  // library's observers never saw it): ebb_requests_refused_total{route, code}.
  void OnRefused(const std::string& route, int status);
  // A streamed response (head 200) that ended with an error event carrying `status`:
  // ebb_stream_errors_total{route, code}.
  void OnStreamError(const std::string& route, int status);
  void OnManagerEvent(ManagerEvent event, const std::string& model);
  // A generation answered by the service took `cached_tokens` of its prompt from the model's
  // prefix cache (GenerateUsage::cached_tokens): Usage::cached_tokens.
  void OnCachedTokens(const std::string& model, uint64_t cached_tokens);

  // The whole exposition (text/plain; version=0.0.4).
  std::string Render(const Runtime& runtime, const ModelManager& manager,
                     const Admission& admission) const;

  // Snapshot for tests and /v1/runtime: requests by outcome over all models.
  uint64_t requests(RequestOutcome outcome) const;

  // Cumulative usage of one model since the service started (it survives unloads), for
  // /v1/runtime, where clients derive requests/s and tokens/s from two samples. Counted when a
  // request ends, so a long stream shows up at its end.
  struct Usage {
    uint64_t requests = 0;  // finished, any outcome
    uint64_t prompt_tokens = 0;
    uint64_t generated_tokens = 0;
    uint64_t cached_tokens = 0;  // of prompt_tokens, taken from the prefix cache
  };
  // By model id; models that never ran a request are absent.
  std::map<std::string, Usage> usage() const;

 private:
  struct PerModel {
    std::array<uint64_t, 3> outcomes{};  // by RequestOutcome
    uint64_t prompt_tokens = 0;
    uint64_t generated_tokens = 0;
    uint64_t cached_tokens = 0;
    Histogram ttft{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
    Histogram tpot{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
    Histogram duration{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}};
  };
  mutable Mutex mu_;
  std::map<std::string, PerModel> models_ EBB_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int>, uint64_t> http_ EBB_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int>, uint64_t> refused_ EBB_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int>, uint64_t> stream_errors_ EBB_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> events_ EBB_GUARDED_BY(mu_);  // by event name
  int64_t in_flight_ EBB_GUARDED_BY(mu_) = 0;
};

}  // namespace ebb::server
