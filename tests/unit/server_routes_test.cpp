// The route table (server/routes.h), the admission's readiness (server/admission.h) and the
// device families of /metrics (server/metrics.h), without a server;
// tests/http/test_serve_drain.py covers the first two over real HTTP.
#include <gtest/gtest.h>

#include <thread>

#include "server/admission.h"
#include "server/metrics.h"
#include "server/routes.h"

namespace ebb::server {
namespace {

TEST(Routes, ProbeAliasesOfLiteLlmAndKServe) {
  for (const char* p : {"/health", "/health/liveliness", "/v2/health/live"}) {
    EXPECT_EQ(ProbeOf(p), Probe::kLive) << p;
  }
  for (const char* p : {"/ready", "/health/readiness", "/v2/health/ready"}) {
    EXPECT_EQ(ProbeOf(p), Probe::kReady) << p;
  }
  for (const char* p : {"/healthz", "/health/", "/v2/health", "/readyz", ""}) {
    EXPECT_EQ(ProbeOf(p), Probe::kNone) << p;
  }
}

TEST(Routes, OnlyKnownRoutesBecomeLabels) {
  EXPECT_EQ(RouteLabel("/v2/health/ready"), "/v2/health/ready");
  EXPECT_EQ(RouteLabel("/health/liveliness"), "/health/liveliness");
  EXPECT_EQ(RouteLabel("/openai/v1/chat/completions"), "/openai/v1/chat/completions");
  EXPECT_EQ(RouteLabel("/openai/v1/embeddings"), "/openai/v1/embeddings");
  EXPECT_EQ(RouteLabel("/openai/v1/models/some-model"), "/openai/v1/models/{id}");
  EXPECT_EQ(RouteLabel("/v1/models/m/runtime/shrink"), "/v1/models/{id}/runtime/shrink");
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix"), "/v1/models/{id}/prefix");
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix/drop"), "/v1/models/{id}/prefix/drop");
  EXPECT_EQ(RouteLabel("/v1/models/m/prefix/other"), "other");
  EXPECT_EQ(RouteLabel("/openai/v1/models/m/load"), "other");  // admin routes: /v1 only
  EXPECT_EQ(RouteLabel("/openai/v1/runtime"), "other");
  EXPECT_EQ(RouteLabel("/openai/v1/models/"), "other");
  EXPECT_EQ(RouteLabel("/\xff\xfe"), "other");
}

// Issue 38: routes were registered in four files and listed again as strings here, so the
// Ollama registry routes had no label. Now one table registers them and yields the labels.
TEST(Routes, OneTableGivesPatternsLabelsAndKinds) {
  EXPECT_EQ(RoutePattern("/v1/models/{id}/prefix"), "/v1/models/([^/]+)/prefix");
  EXPECT_EQ(RoutePattern("/metrics"), "/metrics");
  EXPECT_EQ(RouteLabel("/api/blobs/sha256-abc"), "/api/blobs/{digest}");
  EXPECT_EQ(RouteLabel("/api/delete"), "/api/delete");
  EXPECT_EQ(RouteLabel("/api/blobs/"), "other");
  EXPECT_TRUE(IsInferenceRoute("/openai/v1/completions"));
  EXPECT_TRUE(IsInferenceRoute("/api/embed"));
  EXPECT_FALSE(IsInferenceRoute("/v1/models"));
  EXPECT_FALSE(IsInferenceRoute("other"));
  EXPECT_EQ(FindRoute("GET", "/v1/models/{id}/load"), nullptr) << "load is a POST";
  for (const RouteSpec& r : Routes()) {
    // A path built from the label (each {name} filled) is labelled back with it.
    std::string path;
    for (size_t i = 0; i < r.label.size(); ++i) {
      if (r.label[i] == '{') {
        path += "m-1";
        i = r.label.find('}', i);
      } else {
        path += r.label[i];
      }
    }
    EXPECT_EQ(RouteLabel(path), r.label) << path;
    EXPECT_EQ(FindRoute(r.method, r.label), &r) << r.label;
    EXPECT_EQ(ProbeOf(r.label) != Probe::kNone,
              r.kind == RouteKind::kLive || r.kind == RouteKind::kReady)
        << r.label;
  }
}

TEST(AdmissionReadiness, StalledOnlyWhileWorkIsPendingWithoutProgress) {
  Admission a(1, 4, std::chrono::milliseconds(100));
  EXPECT_TRUE(a.Check().ready);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(a.Check().ready) << "idle is not stalled";
  {
    Admission::Ticket t = a.Enter();
    EXPECT_TRUE(a.Check().ready) << "just admitted";
    for (int i = 0; i < 4; ++i) {  // progress faster than the timeout keeps it ready
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      t.Progress();
      EXPECT_TRUE(a.Check().ready);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const Readiness r = a.Check();
    EXPECT_FALSE(r.ready);
    EXPECT_EQ(r.status, "stalled");
    EXPECT_NE(r.reason.find("1 run and 0 wait"), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(a.Check().ready) << "the request ended";
  a.Drain();
  EXPECT_EQ(a.Check().status, "draining");
}

TEST(AdmissionReadiness, ZeroTimeoutNeverStalls) {
  Admission a(1, 0, std::chrono::milliseconds(0));
  Admission::Ticket t = a.Enter();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(a.Check().ready);
}

// A loaded model whose KV is on `device`, with every figure distinct.
ManagedModel DeviceModel(const std::string& id, const std::string& device) {
  ManagedModel m;
  m.id = id;
  m.loaded = true;
  ModelSummary s;
  s.id = id;
  DeviceMemory& d = s.device;
  d.available = true;
  d.device = device;
  d.adapter = "NVIDIA H200 (NVIDIA, discrete)";
  d.weights_bytes = 1000;
  d.kv.in_use_bytes = 200;
  d.kv.peak_in_use_bytes = 300;
  d.kv.retained_bytes = 40;
  d.ort_cache_bytes = 0;
  d.used_bytes = 1240;
  d.limit_bytes = 4096;
  d.cache_mode = "lazyRelease";
  d.driver_process_bytes = 5000;
  d.driver_used_bytes = 70000;
  d.driver_total_bytes = 150000;
  m.summary = s;
  return m;
}

// The exposition's lines that start with `prefix` (HELP and TYPE lines with "# HELP prefix").
std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    at = end + 1;
  }
  return out;
}

TEST(DeviceMetrics, OnlyDeviceModelsHaveSamplesWithEveryKindAndTheDriverFiguresOnce) {
  ManagedModel cpu;  // loaded on the CPU: device.available is false
  cpu.id = "cpu-model";
  cpu.loaded = true;
  cpu.summary = ModelSummary{};
  ManagedModel known;  // not loaded: no summary
  known.id = "known";
  ManagedModel gpu = DeviceModel("gpu\"m", "webgpu:0");
  // A second device model: ORT's cache not countable, no gpu_mem_limit, no NVML figures.
  ManagedModel other = DeviceModel("other", "webgpu:0");
  other.summary->device.ort_cache_bytes = -1;
  other.summary->device.limit_bytes = 0;
  other.summary->device.driver_process_bytes = -1;
  other.summary->device.driver_used_bytes = -1;
  other.summary->device.driver_total_bytes = -1;
  const std::string text = RenderDeviceMetrics({cpu, known, other, gpu});

  EXPECT_EQ(
      LinesStartingWith(text, "ebb_device_memory_bytes"),
      (std::vector<std::string>{
          R"(ebb_device_memory_bytes{model="other",device="webgpu:0",kind="weights"} 1000)",
          R"(ebb_device_memory_bytes{model="other",device="webgpu:0",kind="kv_in_use"} 200)",
          R"(ebb_device_memory_bytes{model="other",device="webgpu:0",kind="kv_peak"} 300)",
          R"(ebb_device_memory_bytes{model="other",device="webgpu:0",kind="retained"} 40)",
          R"(ebb_device_memory_bytes{model="other",device="webgpu:0",kind="used"} 1240)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="weights"} 1000)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="kv_in_use"} 200)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="kv_peak"} 300)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="retained"} 40)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="ort_cache"} 0)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="used"} 1240)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="limit"} 4096)",
          R"(ebb_device_memory_bytes{model="gpu\"m",device="webgpu:0",kind="driver_process"} 5000)",
      }));
  // Process-level: the first model that has them (NVML's reading is the process's).
  EXPECT_EQ(LinesStartingWith(text, "ebb_device_driver_"),
            (std::vector<std::string>{"ebb_device_driver_used_bytes 70000",
                                      "ebb_device_driver_total_bytes 150000"}));
  for (const char* family : {"ebb_device_memory_bytes", "ebb_device_driver_used_bytes",
                             "ebb_device_driver_total_bytes"}) {
    EXPECT_EQ(LinesStartingWith(text, std::string("# TYPE ") + family),
              std::vector<std::string>{std::string("# TYPE ") + family + " gauge"});
    EXPECT_EQ(LinesStartingWith(text, std::string("# HELP ") + family + " ").size(), 1u);
  }
  EXPECT_EQ(text.find("cpu-model"), std::string::npos);
  EXPECT_EQ(text.find("known"), std::string::npos);
}

TEST(DeviceMetrics, WithoutADeviceModelOnlyTheHelpAndTypeLinesAreWritten) {
  ManagedModel cpu;
  cpu.id = "cpu-model";
  cpu.loaded = true;
  cpu.summary = ModelSummary{};
  for (const std::vector<ManagedModel>& list :
       {std::vector<ManagedModel>{}, std::vector<ManagedModel>{cpu}}) {
    const std::string text = RenderDeviceMetrics(list);
    EXPECT_EQ(LinesStartingWith(text, "#").size(), 6u) << text;
    EXPECT_EQ(LinesStartingWith(text, "ebb_").size(), 0u) << text;
  }
  // A device model without NVML: its samples, and no driver figures.
  ManagedModel gpu = DeviceModel("m", "cuda:0");
  gpu.summary->device.driver_used_bytes = -1;
  gpu.summary->device.driver_total_bytes = -1;
  const std::string text = RenderDeviceMetrics({gpu});
  EXPECT_EQ(LinesStartingWith(text, "ebb_device_driver_").size(), 0u) << text;
  EXPECT_EQ(LinesStartingWith(text, R"(ebb_device_memory_bytes{model="m",device="cuda:0",)").size(),
            8u)
      << text;
}

}  // namespace
}  // namespace ebb::server
