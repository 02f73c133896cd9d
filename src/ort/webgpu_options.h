// WebGPU provider options: ORT's WebGPU execution provider (Dawn inside libonnxruntime; Vulkan on
// Linux, D3D12 on Windows, Metal on macOS) as ebb hands it its options.
//
// ORT takes the keys without a prefix through SessionOptionsAppendExecutionProvider("WebGPU") and
// stores them as "ep.webgpuexecutionprovider.<key>"; it ignores a key it does not know (and a key
// given with that prefix, which it prefixes again) without a word, and refuses a bad value of a
// key it knows (provider_registration.cc, webgpu_provider_factory.cc). So ebb checks them first:
//   - typed keys (the table in webgpu_options.cpp) get their value checked and spelled as ORT
//     wants it ("LAZYRELEASE" -> "lazyRelease"); a bad value is InvalidArgument naming the key,
//     the value and the choices;
//   - "ep.webgpuexecutionprovider.KEY" is accepted as KEY;
//   - any other key passes through to ORT, with a warning (WebGpuOptions::unknown) naming the
//     closest known key;
//   - ebb's own keys (gpu_mem_limit) are taken out: ORT never sees them.
// ebb's defaults: storageBufferCacheMode=lazyRelease (docs/options.md "WebGPU": ORT's default,
// bucket, keeps freed buffers in a cache that nothing public trims and rounds a KV buffer up to
// its bucket).
//
// The device ("context" in ORT) is process-wide: every session on deviceId N shares one Dawn
// device, buffer cache and pipeline cache, and the first session's context options win
// (WebGpuContext::StartInitialize runs once). AcquireWebGpuContext records them; a model asking
// for different ones while another model holds the device is refused, naming both.
// Thread-safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ebb::internal {

// A model's WebGPU options, checked and split.
struct WebGpuOptions {
  std::map<std::string, std::string> ort;  // what ORT gets (unprefixed keys), ebb's defaults in
  // The context-level subset of `ort` (deviceId, the cache modes, validationMode, ...): what the
  // first session on a device fixes for every later one.
  std::map<std::string, std::string> context;
  uint64_t gpu_mem_limit_bytes = 0;  // ebb's device budget; 0 = none
  int device_id = 0;
  // One warning per key ebb does not know (passed to ORT as given), with a did-you-mean: the
  // caller that hands the options to ORT logs them, so a load that parses them more than once
  // warns once.
  std::vector<std::string> unknown;
};

// Checks `options` (provider_options.webgpu, the config's then the user's). `where` names who
// set them, for messages. Throws InvalidArgument for a bad value.
WebGpuOptions ParseWebGpuOptions(const std::map<std::string, std::string>& options,
                                 const std::string& where);

// The typed keys, one per line with their choices (ebb options, docs/options.md).
std::string DescribeWebGpuKeys();

// A hold on a WebGPU device's context options. While any lease on a device exists, every other
// model on that device must ask for the same context options.
class WebGpuContextLease {
 public:
  ~WebGpuContextLease();
  WebGpuContextLease(const WebGpuContextLease&) = delete;
  WebGpuContextLease& operator=(const WebGpuContextLease&) = delete;
  int device_id() const { return device_id_; }

 private:
  friend std::unique_ptr<WebGpuContextLease> AcquireWebGpuContext(const WebGpuOptions&,
                                                                  const std::string&);
  explicit WebGpuContextLease(int device_id) : device_id_(device_id) {}
  int device_id_;
};

// Records `options.context` for its device, or checks them against the recorded ones. `model`
// names the model for messages. Throws InvalidArgument on a conflict.
std::unique_ptr<WebGpuContextLease> AcquireWebGpuContext(const WebGpuOptions& options,
                                                         const std::string& model);

}  // namespace ebb::internal
