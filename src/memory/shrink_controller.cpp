#include "memory/shrink_controller.h"

#include "core/log.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/process_memory.h"
#include "ebb/stats.h"
#include "memory/heap_trim.h"

namespace ebb::internal {
namespace {
// ORT's run config key; the value names the devices whose arenas shrink.
constexpr const char* kShrinkKey = "memory.enable_memory_arena_shrinkage";
constexpr const char* kCpuArena = "cpu:0";
}  // namespace

ShrinkController::ShrinkController(bool has_cpu_arena, bool has_gpu, std::string providers,
                                   std::function<void()> minimal_step, std::function<void()> trim)
    : has_cpu_arena_(has_cpu_arena),
      has_gpu_(has_gpu),
      providers_(std::move(providers)),
      minimal_step_(std::move(minimal_step)),
      trim_(std::move(trim)) {}

Ort::RunOptions ShrinkController::BeginRun(bool* shrink) {
  // Everything that can throw comes before in_flight_ is raised: a throw here must not leave
  // the controller believing a step is running (that would block idle shrinks for good).
  Ort::RunOptions ro;
  std::string devices;  // the user's memory.enable_memory_arena_shrinkage, forwarded as ORT does
  {
    MutexLock lock(mu_);
    for (const auto& [k, v] : run_options_) {
      if (k == kShrinkKey) {
        devices = ort_shrink_devices_;
        continue;
      }
      try {
        ro.AddConfigEntry(k.c_str(), v.c_str());
      } catch (const Ort::Exception& e) {
        throw Error(ErrorCode::InvalidArgument, "run option '" +
                                                    (k.size() > 64 ? k.substr(0, 64) + "..." : k) +
                                                    "' refused by ONNX Runtime (" + e.what() +
                                                    "); clear it with ClearRunOption or fix it");
      }
    }
  }
  *shrink = pending_step_shrink_.exchange(false);
  try {
    // ebb's own shrink names the CPU arena, and only when there is one (ORT fails the Run()
    // otherwise); it is merged with the devices the user named.
    if (*shrink && has_cpu_arena_ && devices.find(kCpuArena) == std::string::npos) {
      devices = devices.empty() ? kCpuArena : devices + ";" + kCpuArena;
    }
    if (!devices.empty()) ro.AddConfigEntry(kShrinkKey, devices.c_str());
  } catch (...) {
    if (*shrink) pending_step_shrink_ = true;
    throw;
  }
  in_flight_.fetch_add(1);
  return ro;
}

void ShrinkController::EndRun(bool shrink, bool ok) {
  in_flight_.fetch_sub(1);
  if (!shrink) return;
  if (!ok) {
    pending_step_shrink_ = true;  // try again on the next step
    return;
  }
  trim_();
  ++num_shrinks_;
}

void ShrinkController::ShrinkNow(bool drop_cache) {
  // The prefix cache's blocks are copies no step reads: they go back now, whatever the arena.
  if (drop_cache && drop_cache_) drop_cache_();
  MutexLock serial(shrink_mu_);
  pending_step_shrink_ = true;
  if (in_flight_.load() > 0) return;  // rides on the end of the running step
  if (!has_cpu_arena_) {
    // Nothing for ORT to do; trim what ebb owns.
    if (pending_step_shrink_.exchange(false)) {
      trim_();
      ++num_shrinks_;
    }
    return;
  }
  try {
    minimal_step_();  // picks up pending_step_shrink_ in BeginRun
    // The step's own generator returned its KV after that Run: what the pool kept of it goes
    // too (a device pool keeps whole buffers; the host pool its mappings).
    trim_();
  } catch (const Error& e) {
    EBB_LOG_WARN("shrink: the minimal step failed ({}); trimming KV and heap only", e.what());
    if (pending_step_shrink_.exchange(false)) {
      trim_();
      ++num_shrinks_;
    }
  }
}

void ShrinkController::EndRequest() {
  const uint64_t n = ++num_requests_;
  bool shrink = after_next_request_.exchange(false);
  const uint32_t every = every_n_.load();
  const bool periodic = every > 0 && (n - every_base_.load()) % every == 0;
  const uint64_t above = above_bytes_.load();
  if (above > 0) {
    const ProcessMemory pm = ReadProcessMemory();
    if (pm.rss_bytes > 0 && static_cast<uint64_t>(pm.rss_bytes) > above) shrink = true;
  }
  if (shrink || periodic) {
    ShrinkNow(/*drop_cache=*/shrink);
    return;
  }
  // ORT's own shrink key frees arena regions at the end of every Run(), but glibc keeps the
  // freed regions in its heap (measured: RSS +70 KiB/request over 1,000 RAG requests); ebb
  // trims the heap once per request so that the key does what users set it for.
  bool ort_shrinks = false;
  {
    MutexLock lock(mu_);
    ort_shrinks = run_options_.count(kShrinkKey) > 0;
  }
  if (ort_shrinks) TrimHeap();
}

void ShrinkController::SetRunOption(const std::string& key, const std::string& value) {
  if (key == kShrinkKey) {
    if (value.empty()) {  // ORT's spelling of "off"
      ClearRunOption(key);
      EBB_LOG_INFO("run option {}='' -> off", key);
      return;
    }
    CheckShrinkDevices(value);
  }
  {
    MutexLock lock(mu_);
    run_options_[key] = value;
    if (key == kShrinkKey) ort_shrink_devices_ = OrtShrinkDevices(value);
  }
  if (key == kShrinkKey && device_keep_nothing_) {
    device_keep_nothing_(OrtShrinkDevices(value) != value);
  }
  if (key == kShrinkKey) {
    EBB_LOG_INFO(
        "run option {}='{}': ORT shrinks these arenas at the end of EVERY Run() (every "
        "token), and ebb trims the heap at the end of every request; ShrinkAfterNextRun/"
        "ShrinkEvery shrink once per request",
        key, value);
  } else {
    EBB_LOG_INFO("run option {}='{}' -> ORT run config entry for every later Run()", key, value);
  }
}

std::string ShrinkController::OrtShrinkDevices(const std::string& value) const {
  if (webgpu_device_.empty()) return value;
  std::string out;
  for (const std::string& dev : Split(value, ';')) {
    if (dev.empty() || dev.starts_with("webgpu:") || dev.starts_with("gpu:")) continue;
    out += (out.empty() ? "" : ";") + dev;
  }
  return out;
}

void ShrinkController::CheckShrinkDevices(const std::string& value) const {
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(';', start);
    if (end == std::string::npos) end = value.size();
    const std::string dev = value.substr(start, end - start);
    start = end + 1;
    if (dev.empty()) continue;
    const auto colon = dev.find(':');
    const std::string kind = dev.substr(0, colon);
    const bool id_ok = colon != std::string::npos && colon + 1 < dev.size() &&
                       dev.find_first_not_of("0123456789", colon + 1) == std::string::npos;
    const bool webgpu = !webgpu_device_.empty() && (kind == "webgpu" || kind == "gpu");
    if (!id_ok || (kind != "cpu" && kind != "gpu" && !(kind == "webgpu" && webgpu))) {
      throw Error(ErrorCode::InvalidArgument,
                  std::string(kShrinkKey) + "='" + value + "': '" + dev +
                      "' is not a device; write cpu:0, gpu:0 or cpu:0;gpu:0 (webgpu:0 on a "
                      "WebGPU model; empty = off)");
    }
    if (webgpu) {
      if (dev.substr(colon + 1) != webgpu_device_.substr(webgpu_device_.find(':') + 1)) {
        throw Error(ErrorCode::InvalidArgument,
                    std::string(kShrinkKey) + "='" + value + "' names " + dev +
                        ", but this model's KV is on " + webgpu_device_);
      }
      continue;
    }
    if (kind == "cpu" && !has_cpu_arena_) {
      throw Error(ErrorCode::InvalidArgument,
                  std::string(kShrinkKey) + "='" + value +
                      "' names the CPU arena, but this model has none (enable_cpu_mem_arena=0); "
                      "ORT would fail every Run(). Remove the key, or load with "
                      "enable_cpu_mem_arena=1");
    }
    if (kind == "gpu" && !has_gpu_) {
      throw Error(ErrorCode::InvalidArgument,
                  std::string(kShrinkKey) + "='" + value + "' names " + dev +
                      ", but this model runs on " + providers_ +
                      ", no GPU execution provider; ORT would fail every Run(). Name cpu:0 "
                      "only");
    }
  }
}

void ShrinkController::ClearRunOption(const std::string& key) {
  MutexLock lock(mu_);
  run_options_.erase(key);
  if (key == kShrinkKey) ort_shrink_devices_.clear();
  if (key == kShrinkKey && device_keep_nothing_) device_keep_nothing_(false);
}

std::map<std::string, std::string> ShrinkController::RunOptions() const {
  MutexLock lock(mu_);
  return run_options_;
}

}  // namespace ebb::internal
