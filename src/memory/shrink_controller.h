// ShrinkController — the state behind a model's ModelControls: run options, shrink policies, and
// the counters they keep. One per model, owned by ModelImpl.
//
// Thread-safety: all methods are thread-safe. Generators call BeginRun/EndRun around every
// Run() and EndRequest when a generation ends.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "core/thread_annotations.h"

namespace ebb::internal {

class ShrinkController {
 public:
  // `has_cpu_arena` / `has_gpu`: the session has a CPU arena / runs on a GPU EP (which devices
  // memory.enable_memory_arena_shrinkage may name); `providers`: the providers it runs on, for
  // the message that refuses a gpu:N key ("cpu (execution_provider=cpu)"). `minimal_step`: runs one
  // tiny Run() on the model (used to shrink while idle); it calls BeginRun/EndRun itself like any
  // step. `trim`: trims the KV pool and the heap.
  ShrinkController(bool has_cpu_arena, bool has_gpu, std::string providers,
                   std::function<void()> minimal_step, std::function<void()> trim);

  // Run options for a step; `shrink` is set when this step must carry ebb's shrink. The user's
  // memory.enable_memory_arena_shrinkage, when set, rides on every step, as in ORT. On a throw,
  // nothing changed (no step is counted as running).
  Ort::RunOptions BeginRun(bool* shrink);
  // After the step (success or failure). Performs the KV/heap part of a shrink carried by it.
  void EndRun(bool shrink, bool ok);
  // End of a request (a generation). Applies the policies.
  void EndRequest();

  // `drop_cache`: also drop the model's unpinned prefix cache (set_drop_cache), at once. Every
  // shrink does but shrink_every's (docs/memory.md "Prefix cache": a periodic shrink that emptied
  // the cache would make its hit rate depend on N).
  void ShrinkNow(bool drop_cache = true);
  void set_drop_cache(std::function<void()> fn) { drop_cache_ = std::move(fn); }
  // A model whose KV lives on a WebGPU device (`device`, "webgpu:0"): memory.enable_memory_
  // arena_shrinkage may name it as webgpu:N or gpu:N. ORT has no arena there (it refuses
  // "webgpu" and finds no arena for "gpu" on WebGPU), so ebb takes those names out of what ORT
  // gets and keeps nothing on the device past a Run() instead, as ORT's key means:
  // `keep_nothing(true)` when the key names the device, `(false)` when it no longer does. Set
  // once at load, before any request.
  void set_webgpu_device(std::string device, std::function<void(bool)> keep_nothing) {
    webgpu_device_ = std::move(device);
    device_keep_nothing_ = std::move(keep_nothing);
  }
  void ShrinkAfterNextRequest() { after_next_request_ = true; }
  // Counts requests from this call on: the n-th, 2n-th, ... request after it shrinks.
  void ShrinkEvery(uint32_t n) {
    every_base_ = num_requests_.load();
    every_n_ = n;
  }
  void ShrinkAbove(uint64_t bytes) { above_bytes_ = bytes; }
  uint32_t shrink_every() const { return every_n_.load(); }
  uint64_t shrink_above() const { return above_bytes_.load(); }

  // Forwarded to every later Run(). memory.enable_memory_arena_shrinkage is checked: "" turns it
  // off; each device it names must have an arena here (InvalidArgument otherwise).
  void SetRunOption(const std::string& key, const std::string& value);
  void ClearRunOption(const std::string& key);
  std::map<std::string, std::string> RunOptions() const;

  bool has_cpu_arena() const { return has_cpu_arena_; }
  uint64_t num_shrinks() const { return num_shrinks_; }
  uint64_t num_requests() const { return num_requests_; }

 private:
  void CheckShrinkDevices(const std::string& value) const;
  // The user's shrink devices less the WebGPU ones, which ORT does not take (see
  // set_webgpu_device).
  std::string OrtShrinkDevices(const std::string& value) const;

  const bool has_cpu_arena_;
  const bool has_gpu_;
  const std::string providers_;
  std::function<void()> minimal_step_;
  std::function<void()> trim_;
  std::function<void()> drop_cache_;  // set once at load, before any request
  std::string webgpu_device_;         // set once at load (set_webgpu_device)
  std::function<void(bool)> device_keep_nothing_;
  mutable Mutex mu_;
  std::map<std::string, std::string> run_options_ EBB_GUARDED_BY(mu_);
  // The user's memory.enable_memory_arena_shrinkage as ORT gets it (OrtShrinkDevices), computed
  // when it is set rather than at every Run().
  std::string ort_shrink_devices_ EBB_GUARDED_BY(mu_);
  std::atomic<int> in_flight_{0};
  std::atomic<bool> pending_step_shrink_{false};
  std::atomic<bool> after_next_request_{false};
  std::atomic<uint32_t> every_n_{0};
  std::atomic<uint64_t> every_base_{0};
  std::atomic<uint64_t> above_bytes_{0};
  std::atomic<uint64_t> num_shrinks_{0};
  std::atomic<uint64_t> num_requests_{0};
  Mutex shrink_mu_;  // serialises idle shrinks
};

}  // namespace ebb::internal
