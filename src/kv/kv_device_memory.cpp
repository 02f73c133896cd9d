#include "kv/kv_device_memory.h"

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::internal {
namespace {

Ort::Allocator SessionAllocator(const Ort::Session& session, const Ort::MemoryInfo& info,
                                const std::string& name) {
  try {
    return Ort::Allocator(session, info);
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::Unavailable, "the session has no allocator for " + name +
                                            ", so the KV cannot live there (" + e.what() + ")");
  }
}

}  // namespace

OrtKvDeviceMemory::OrtKvDeviceMemory(const Ort::Session& session, const std::string& memory_name,
                                     int device_id, std::string device_name)
    : info_(memory_name.c_str(), OrtDeviceAllocator, device_id, OrtMemTypeDefault),
      allocator_(SessionAllocator(session, info_, device_name)),
      name_(std::move(device_name)) {}

void* OrtKvDeviceMemory::Alloc(uint64_t bytes) {
  void* p = nullptr;
  try {
    p = allocator_.Alloc(bytes);
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::ResourceExhausted, "KV cache: " + name_ + " refused " +
                                                  FormatBytes(bytes) + " (" + e.what() +
                                                  "); lower max_length or the batch size");
  }
  if (p == nullptr) {
    throw Error(ErrorCode::ResourceExhausted, "KV cache: " + name_ + " refused " +
                                                  FormatBytes(bytes) +
                                                  "; lower max_length or the batch size");
  }
  return p;
}

void OrtKvDeviceMemory::Free(void* handle) noexcept {
  try {
    allocator_.Free(handle);
  } catch (...) {
    // ORT's Free does not fail for a handle it gave; nothing to do if it ever does.
  }
}

}  // namespace ebb::internal
