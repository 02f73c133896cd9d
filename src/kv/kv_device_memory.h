// OrtKvDeviceMemory — KvDeviceMemory (kv/kv_pool.h) over the session's ORT allocator for a
// device: "WebGPU_Buf" (ORT's WebGPU buffer allocator; each allocation is one WGPUBuffer) or
// "Cuda"/"Hip" (device pointers). The session's own allocator is used, not a new one, so the KV
// lives where the session's kernels read it and IoBinding-free Run() calls take it in place.
// Ownership: holds a non-owning reference to the session through ORT's allocator; the model
// destroys its KvPool (and so this) before its session.
// Thread-safety: Alloc and Free are thread-safe (ORT's allocators are).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>

#include "kv/kv_pool.h"

namespace ebb::internal {

class OrtKvDeviceMemory final : public KvDeviceMemory {
 public:
  // `memory_name`: ORT's OrtMemoryInfo name for the device ("WebGPU_Buf", "Cuda", ...);
  // `device_name`: "webgpu:0" for messages. Throws ebb::Error(Unavailable) when the session has
  // no allocator for that device (it does not run on it).
  OrtKvDeviceMemory(const Ort::Session& session, const std::string& memory_name, int device_id,
                    std::string device_name);

  void* Alloc(uint64_t bytes) override;
  void Free(void* handle) noexcept override;
  const Ort::MemoryInfo& memory_info() const override { return info_; }
  std::string name() const override { return name_; }

 private:
  Ort::MemoryInfo info_;
  Ort::Allocator allocator_;
  std::string name_;
};

}  // namespace ebb::internal
