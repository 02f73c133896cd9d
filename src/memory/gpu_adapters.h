// The machine's Vulkan adapters, as the Vulkan loader lists them, and which one ORT's WebGPU
// execution provider (Dawn, linked inside libonnxruntime) most likely runs on.
//
// Why: on Linux, Dawn reaches the GPU through the Vulkan loader (libvulkan.so.1), but ORT reports
// neither which adapter Dawn chose nor any device memory figure. So ebb asks the loader itself,
// for `ebb info`, `--version` and the model-load log line.
//
// How: ListGpuAdapters() opens libvulkan.so.1 at run time with dlopen (ebb has no build-time
// Vulkan dependency and no Vulkan headers: the few types it needs are declared in
// gpu_adapters.cpp, per the Vulkan 1.x ABI), creates a Vulkan 1.1 instance with no layers and no
// extensions, reads every physical device's properties and memory heaps, destroys the instance
// and closes the library. Nothing is cached: each call asks again (it is called rarely, and a
// fresh answer follows driver changes, VK_DRIVER_FILES and the like).
//
// Which adapter is `chosen`: the one Dawn's SortAdapters puts first for
// powerPreference = HighPerformance (what ORT's WebGPU EP requests) on the Vulkan backend. Dawn
// maps VkPhysicalDeviceType to wgpu::AdapterType (VIRTUAL_GPU and OTHER both become Unknown) and
// ranks discrete GPU 0, integrated GPU 1, CPU 2, Unknown (virtual, other) 3; among equal ranks
// the first enumerated wins (Dawn sorts with std::sort, which for the handful of adapters a
// machine has runs an insertion sort and keeps the loader's order). This mirrors Dawn's ordering
// and is what ebb reports; ORT does not report Dawn's actual choice, and Dawn may still skip an
// adapter it finds unsuitable (e.g. a Vulkan 1.0 device), which ebb does not model.
//
// Thread-safety: free functions with no shared state; ListGpuAdapters may run on several threads
// at once (dlopen and vkCreateInstance are thread-safe). Never throws; a missing or broken loader
// (missing entry points, failing calls) becomes `error`, not a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::internal {

// One Vulkan physical device (VkPhysicalDeviceProperties + VkPhysicalDeviceMemoryProperties).
struct GpuAdapter {
  std::string name;        // deviceName, e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;        // "discrete", "integrated", "virtual", "cpu" or "other"
  uint32_t vendor_id = 0;  // PCI vendor id, or a Khronos id (0x10005 = Mesa)
  uint32_t device_id = 0;
  std::string vendor;          // VulkanVendorName(vendor_id)
  std::string driver_version;  // DecodeVulkanDriverVersion(vendor_id, driverVersion)
  // VkPhysicalDeviceDriverProperties (VK_KHR_driver_properties), empty when the device lacks the
  // extension: driverName ("NVIDIA", "llvmpipe") and driverInfo ("580.95.05",
  // "Mesa 25.0.7 (LLVM 15.0.6)"). Some drivers' driverVersion says little (lavapipe reports 1,
  // "0.0.1"), so DescribeGpuAdapter shows driver_info when there is one.
  std::string driver_name;
  std::string driver_info;
  std::string api_version;                   // DecodeVulkanApiVersion(apiVersion), e.g. "1.3.277"
  uint64_t device_local_bytes = 0;           // sum of the DEVICE_LOCAL heaps' sizes, bytes
  std::vector<uint64_t> heap_bytes;          // every memory heap's size, bytes, in heap order
  std::vector<bool> heap_device_local;       // per heap: VK_MEMORY_HEAP_DEVICE_LOCAL_BIT set
  uint64_t max_storage_buffer_range = 0;     // limits.maxStorageBufferRange, bytes
  uint64_t max_memory_allocation_count = 0;  // limits.maxMemoryAllocationCount
  bool chosen = false;  // the adapter Dawn would pick (ChooseGpuAdapter); at most one is
};

struct GpuAdapterList {
  bool loader_found = false;  // libvulkan.so.1 opened and has vkGetInstanceProcAddr
  // Why `adapters` is empty (empty when it is not): no loader (with how to get one), the loader
  // lacks an entry point, vkCreateInstance failed with VkResult N, or no physical devices.
  std::string error;
  std::vector<GpuAdapter> adapters;  // in the loader's enumeration order
  // The file the loader was opened from (e.g. "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"), for
  // messages; empty when no loader was opened or the path is unknown.
  std::string loader_path_hint;
};

// Lists the adapters through "libvulkan.so.1" (the name Dawn opens), `chosen` marked.
GpuAdapterList ListGpuAdapters();

// The same through another library name or path (tests: a library that is not a Vulkan loader
// must give an error, not a crash).
GpuAdapterList ListGpuAdaptersFrom(const std::string& loader_library);

// One line for logs and `ebb info`, the driver given by driver_info when set, else by
// driver_version:
// "NVIDIA H200 (NVIDIA, discrete, Vulkan 1.4.312, driver 580.159.04, 140.40 GiB device-local)"
// (measured on an H200, driver 580.159.04; NVML and nvidia-smi write the same version).
std::string DescribeGpuAdapter(const GpuAdapter& adapter);

// ---- Pure helpers (no loader needed; exposed for the tests) -----------------------------------

// "NVIDIA" (0x10DE), "AMD" (0x1002, 0x1022), "Intel" (0x8086), "Mesa (software)" (0x10005,
// VK_VENDOR_ID_MESA), "ARM" (0x13B5), "Qualcomm" (0x5143), "Apple" (0x106B), "Microsoft"
// (0x1414); any other id as "0x" and lowercase hex, e.g. "0x1234".
std::string VulkanVendorName(uint32_t vendor_id);

// VkPhysicalDeviceProperties::driverVersion decoded as Dawn does: NVIDIA packs 10.8.8.6 bits
// (major = v>>22 & 0x3ff, minor = v>>14 & 0xff, sub = v>>6 & 0xff, patch = v & 0x3f), written
// the way NVIDIA and NVML write it, "580.95.05" (sub in two digits; ".patch" only when it is not
// 0, which no release so far uses); every other vendor uses VK_MAKE_VERSION (major = v>>22,
// minor = v>>12 & 0x3ff, patch = v & 0xfff; Mesa 25.0.7 -> "25.0.7"). Intel's Windows packing
// is not handled (ebb runs on Linux).
std::string DecodeVulkanDriverVersion(uint32_t vendor_id, uint32_t raw);

// An apiVersion (VK_MAKE_API_VERSION: variant 3 bits, major 7, minor 10, patch 12) as
// "major.minor.patch"; the variant, 0 for Vulkan, is not shown.
std::string DecodeVulkanApiVersion(uint32_t raw);

// VkPhysicalDeviceType: 0 "other", 1 "integrated", 2 "discrete", 3 "virtual", 4 "cpu"; any
// other value "other".
std::string_view VulkanDeviceTypeName(uint32_t device_type);

// Dawn's rank for HighPerformance (lower is preferred): "discrete" 0, "integrated" 1, "cpu" 2,
// anything else ("virtual", "other", unknown text) 3.
int DawnAdapterTypeRank(std::string_view type);

// The index of the adapter Dawn would choose (lowest rank, first enumerated among equals);
// -1 when `adapters` is empty.
int ChooseGpuAdapter(const std::vector<GpuAdapter>& adapters);

// Sets `chosen` on ChooseGpuAdapter's adapter and clears it on every other.
void MarkChosenGpuAdapter(std::vector<GpuAdapter>& adapters);

}  // namespace ebb::internal
