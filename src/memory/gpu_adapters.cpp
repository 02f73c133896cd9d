#include "memory/gpu_adapters.h"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "core/strings.h"
#include "platform/dynlib.h"

namespace ebb::internal {
namespace {

// ---- The Vulkan 1.x ABI, declared here (no Vulkan headers are installed) ----------------------
// Each declaration follows the Vulkan specification's C definition (vulkan_core.h) of the name in
// its comment, field for field; only the fields ebb reads are used, but every struct is complete
// so that the driver writes into memory of the size it expects. VKAPI_CALL / VKAPI_PTR are empty
// on Linux (they are __stdcall only on 32-bit Windows), so plain C function pointers match.

using VkFlags = uint32_t;              // VkFlags
using VkBool32 = uint32_t;             // VkBool32
using VkDeviceSize = uint64_t;         // VkDeviceSize
using VkResult = int32_t;              // enum VkResult (C enums are int-sized on the Linux ABIs)
using VkStructureType = int32_t;       // enum VkStructureType
using VkPhysicalDeviceType = int32_t;  // enum VkPhysicalDeviceType
struct VkInstance_T;                   // VK_DEFINE_HANDLE(VkInstance): a dispatchable handle,
using VkInstance = VkInstance_T*;      // a pointer
struct VkPhysicalDevice_T;             // VK_DEFINE_HANDLE(VkPhysicalDevice)
using VkPhysicalDevice = VkPhysicalDevice_T*;

constexpr VkResult kVkSuccess = 0;                                 // VK_SUCCESS
constexpr VkResult kVkIncomplete = 5;                              // VK_INCOMPLETE
constexpr VkStructureType kVkStructureTypeApplicationInfo = 0;     // ..._APPLICATION_INFO
constexpr VkStructureType kVkStructureTypeInstanceCreateInfo = 1;  // ..._INSTANCE_CREATE_INFO
// VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, ..._PHYSICAL_DEVICE_DRIVER_PROPERTIES
constexpr VkStructureType kVkStructureTypePhysicalDeviceProperties2 = 1000059001;
constexpr VkStructureType kVkStructureTypePhysicalDeviceDriverProperties = 1000196000;
constexpr uint32_t kVkApiVersion11 = (1u << 22) | (1u << 12);  // VK_API_VERSION_1_1
constexpr VkFlags kVkMemoryHeapDeviceLocalBit = 0x1;           // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
constexpr uint32_t kVkMaxPhysicalDeviceNameSize = 256;         // VK_MAX_PHYSICAL_DEVICE_NAME_SIZE
constexpr uint32_t kVkUuidSize = 16;                           // VK_UUID_SIZE
constexpr uint32_t kVkMaxMemoryTypes = 32;                     // VK_MAX_MEMORY_TYPES
constexpr uint32_t kVkMaxMemoryHeaps = 16;                     // VK_MAX_MEMORY_HEAPS
constexpr uint32_t kVkMaxExtensionNameSize = 256;              // VK_MAX_EXTENSION_NAME_SIZE
constexpr uint32_t kVkMaxDriverNameSize = 256;                 // VK_MAX_DRIVER_NAME_SIZE
constexpr uint32_t kVkMaxDriverInfoSize = 256;                 // VK_MAX_DRIVER_INFO_SIZE

// VkApplicationInfo
struct VkApplicationInfo {
  VkStructureType sType;
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};

// VkInstanceCreateInfo
struct VkInstanceCreateInfo {
  VkStructureType sType;
  const void* pNext;
  VkFlags flags;  // VkInstanceCreateFlags
  const VkApplicationInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};

// VkPhysicalDeviceLimits (Vulkan 1.0, unchanged since).
struct VkPhysicalDeviceLimits {
  uint32_t maxImageDimension1D;
  uint32_t maxImageDimension2D;
  uint32_t maxImageDimension3D;
  uint32_t maxImageDimensionCube;
  uint32_t maxImageArrayLayers;
  uint32_t maxTexelBufferElements;
  uint32_t maxUniformBufferRange;
  uint32_t maxStorageBufferRange;
  uint32_t maxPushConstantsSize;
  uint32_t maxMemoryAllocationCount;
  uint32_t maxSamplerAllocationCount;
  VkDeviceSize bufferImageGranularity;
  VkDeviceSize sparseAddressSpaceSize;
  uint32_t maxBoundDescriptorSets;
  uint32_t maxPerStageDescriptorSamplers;
  uint32_t maxPerStageDescriptorUniformBuffers;
  uint32_t maxPerStageDescriptorStorageBuffers;
  uint32_t maxPerStageDescriptorSampledImages;
  uint32_t maxPerStageDescriptorStorageImages;
  uint32_t maxPerStageDescriptorInputAttachments;
  uint32_t maxPerStageResources;
  uint32_t maxDescriptorSetSamplers;
  uint32_t maxDescriptorSetUniformBuffers;
  uint32_t maxDescriptorSetUniformBuffersDynamic;
  uint32_t maxDescriptorSetStorageBuffers;
  uint32_t maxDescriptorSetStorageBuffersDynamic;
  uint32_t maxDescriptorSetSampledImages;
  uint32_t maxDescriptorSetStorageImages;
  uint32_t maxDescriptorSetInputAttachments;
  uint32_t maxVertexInputAttributes;
  uint32_t maxVertexInputBindings;
  uint32_t maxVertexInputAttributeOffset;
  uint32_t maxVertexInputBindingStride;
  uint32_t maxVertexOutputComponents;
  uint32_t maxTessellationGenerationLevel;
  uint32_t maxTessellationPatchSize;
  uint32_t maxTessellationControlPerVertexInputComponents;
  uint32_t maxTessellationControlPerVertexOutputComponents;
  uint32_t maxTessellationControlPerPatchOutputComponents;
  uint32_t maxTessellationControlTotalOutputComponents;
  uint32_t maxTessellationEvaluationInputComponents;
  uint32_t maxTessellationEvaluationOutputComponents;
  uint32_t maxGeometryShaderInvocations;
  uint32_t maxGeometryInputComponents;
  uint32_t maxGeometryOutputComponents;
  uint32_t maxGeometryOutputVertices;
  uint32_t maxGeometryTotalOutputComponents;
  uint32_t maxFragmentInputComponents;
  uint32_t maxFragmentOutputAttachments;
  uint32_t maxFragmentDualSrcAttachments;
  uint32_t maxFragmentCombinedOutputResources;
  uint32_t maxComputeSharedMemorySize;
  uint32_t maxComputeWorkGroupCount[3];
  uint32_t maxComputeWorkGroupInvocations;
  uint32_t maxComputeWorkGroupSize[3];
  uint32_t subPixelPrecisionBits;
  uint32_t subTexelPrecisionBits;
  uint32_t mipmapPrecisionBits;
  uint32_t maxDrawIndexedIndexValue;
  uint32_t maxDrawIndirectCount;
  float maxSamplerLodBias;
  float maxSamplerAnisotropy;
  uint32_t maxViewports;
  uint32_t maxViewportDimensions[2];
  float viewportBoundsRange[2];
  uint32_t viewportSubPixelBits;
  size_t minMemoryMapAlignment;
  VkDeviceSize minTexelBufferOffsetAlignment;
  VkDeviceSize minUniformBufferOffsetAlignment;
  VkDeviceSize minStorageBufferOffsetAlignment;
  int32_t minTexelOffset;
  uint32_t maxTexelOffset;
  int32_t minTexelGatherOffset;
  uint32_t maxTexelGatherOffset;
  float minInterpolationOffset;
  float maxInterpolationOffset;
  uint32_t subPixelInterpolationOffsetBits;
  uint32_t maxFramebufferWidth;
  uint32_t maxFramebufferHeight;
  uint32_t maxFramebufferLayers;
  VkFlags framebufferColorSampleCounts;  // VkSampleCountFlags, here and below
  VkFlags framebufferDepthSampleCounts;
  VkFlags framebufferStencilSampleCounts;
  VkFlags framebufferNoAttachmentsSampleCounts;
  uint32_t maxColorAttachments;
  VkFlags sampledImageColorSampleCounts;
  VkFlags sampledImageIntegerSampleCounts;
  VkFlags sampledImageDepthSampleCounts;
  VkFlags sampledImageStencilSampleCounts;
  VkFlags storageImageSampleCounts;
  uint32_t maxSampleMaskWords;
  VkBool32 timestampComputeAndGraphics;
  float timestampPeriod;
  uint32_t maxClipDistances;
  uint32_t maxCullDistances;
  uint32_t maxCombinedClipAndCullDistances;
  uint32_t discreteQueuePriorities;
  float pointSizeRange[2];
  float lineWidthRange[2];
  float pointSizeGranularity;
  float lineWidthGranularity;
  VkBool32 strictLines;
  VkBool32 standardSampleLocations;
  VkDeviceSize optimalBufferCopyOffsetAlignment;
  VkDeviceSize optimalBufferCopyRowPitchAlignment;
  VkDeviceSize nonCoherentAtomSize;
};

// VkPhysicalDeviceSparseProperties
struct VkPhysicalDeviceSparseProperties {
  VkBool32 residencyStandard2DBlockShape;
  VkBool32 residencyStandard2DMultisampleBlockShape;
  VkBool32 residencyStandard3DBlockShape;
  VkBool32 residencyAlignedMipSize;
  VkBool32 residencyNonResidentStrict;
};

// VkPhysicalDeviceProperties
struct VkPhysicalDeviceProperties {
  uint32_t apiVersion;
  uint32_t driverVersion;
  uint32_t vendorID;
  uint32_t deviceID;
  VkPhysicalDeviceType deviceType;
  char deviceName[kVkMaxPhysicalDeviceNameSize];
  uint8_t pipelineCacheUUID[kVkUuidSize];
  VkPhysicalDeviceLimits limits;
  VkPhysicalDeviceSparseProperties sparseProperties;
};

// VkMemoryType
struct VkMemoryType {
  VkFlags propertyFlags;  // VkMemoryPropertyFlags
  uint32_t heapIndex;
};

// VkMemoryHeap
struct VkMemoryHeap {
  VkDeviceSize size;
  VkFlags flags;  // VkMemoryHeapFlags
};

// VkPhysicalDeviceMemoryProperties
struct VkPhysicalDeviceMemoryProperties {
  uint32_t memoryTypeCount;
  VkMemoryType memoryTypes[kVkMaxMemoryTypes];
  uint32_t memoryHeapCount;
  VkMemoryHeap memoryHeaps[kVkMaxMemoryHeaps];
};

// VkPhysicalDeviceProperties2 (Vulkan 1.1)
struct VkPhysicalDeviceProperties2 {
  VkStructureType sType;
  void* pNext;
  VkPhysicalDeviceProperties properties;
};

// VkConformanceVersion
struct VkConformanceVersion {
  uint8_t major;
  uint8_t minor;
  uint8_t subminor;
  uint8_t patch;
};

// VkPhysicalDeviceDriverProperties (VK_KHR_driver_properties; core in Vulkan 1.2)
struct VkPhysicalDeviceDriverProperties {
  VkStructureType sType;
  void* pNext;
  int32_t driverID;  // enum VkDriverId
  char driverName[kVkMaxDriverNameSize];
  char driverInfo[kVkMaxDriverInfoSize];
  VkConformanceVersion conformanceVersion;
};

// VkExtensionProperties
struct VkExtensionProperties {
  char extensionName[kVkMaxExtensionNameSize];
  uint32_t specVersion;
};

// The layout checks that a mistyped field would break (sizes and offsets as the C compiler lays
// out the spec's structs on LP64 Linux: x86-64 and AArch64).
static_assert(sizeof(void*) == 8, "the declarations below are checked for LP64 only");
static_assert(sizeof(VkApplicationInfo) == 48);
static_assert(sizeof(VkInstanceCreateInfo) == 64);
static_assert(offsetof(VkPhysicalDeviceLimits, maxStorageBufferRange) == 28);
static_assert(offsetof(VkPhysicalDeviceLimits, maxMemoryAllocationCount) == 36);
static_assert(offsetof(VkPhysicalDeviceLimits, bufferImageGranularity) == 48);
static_assert(sizeof(VkPhysicalDeviceLimits) == 504);
static_assert(offsetof(VkPhysicalDeviceProperties, limits) == 296);
static_assert(sizeof(VkPhysicalDeviceProperties) == 824);
static_assert(sizeof(VkMemoryHeap) == 16);
static_assert(offsetof(VkPhysicalDeviceMemoryProperties, memoryHeapCount) == 260);
static_assert(offsetof(VkPhysicalDeviceMemoryProperties, memoryHeaps) == 264);
static_assert(sizeof(VkPhysicalDeviceMemoryProperties) == 520);
static_assert(offsetof(VkPhysicalDeviceProperties2, properties) == 16);
static_assert(sizeof(VkPhysicalDeviceProperties2) == 840);
static_assert(offsetof(VkPhysicalDeviceDriverProperties, driverName) == 20);
static_assert(offsetof(VkPhysicalDeviceDriverProperties, driverInfo) == 276);
static_assert(sizeof(VkPhysicalDeviceDriverProperties) == 536);
static_assert(sizeof(VkExtensionProperties) == 260);

// PFN_vkVoidFunction, PFN_vkGetInstanceProcAddr, PFN_vkCreateInstance, PFN_vkDestroyInstance,
// PFN_vkEnumeratePhysicalDevices, PFN_vkGetPhysicalDeviceProperties,
// PFN_vkGetPhysicalDeviceMemoryProperties. The allocator argument (const VkAllocationCallbacks*)
// is always null here, so it is declared as an opaque pointer.
using PFN_vkVoidFunction = void (*)();
using PFN_vkGetInstanceProcAddr = PFN_vkVoidFunction (*)(VkInstance, const char*);
using PFN_vkCreateInstance = VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*);
using PFN_vkDestroyInstance = void (*)(VkInstance, const void*);
using PFN_vkEnumeratePhysicalDevices = VkResult (*)(VkInstance, uint32_t*, VkPhysicalDevice*);
using PFN_vkGetPhysicalDeviceProperties = void (*)(VkPhysicalDevice, VkPhysicalDeviceProperties*);
using PFN_vkGetPhysicalDeviceMemoryProperties = void (*)(VkPhysicalDevice,
                                                         VkPhysicalDeviceMemoryProperties*);
// PFN_vkGetPhysicalDeviceProperties2 (Vulkan 1.1), PFN_vkEnumerateDeviceExtensionProperties.
using PFN_vkGetPhysicalDeviceProperties2 = void (*)(VkPhysicalDevice, VkPhysicalDeviceProperties2*);
using PFN_vkEnumerateDeviceExtensionProperties = VkResult (*)(VkPhysicalDevice, const char*,
                                                              uint32_t*, VkExtensionProperties*);

// More devices than this is a broken loader's count, not a machine.
constexpr uint32_t kMaxPhysicalDevices = 64;

// The spec's name of a VkResult, for messages ("VK_ERROR_INCOMPATIBLE_DRIVER").
const char* VkResultName(VkResult r) {
  switch (r) {
    case 0:
      return "VK_SUCCESS";
    case 5:
      return "VK_INCOMPLETE";
    case -1:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case -2:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case -3:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case -4:
      return "VK_ERROR_DEVICE_LOST";
    case -6:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case -7:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case -9:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    default:
      return "an unlisted VkResult";
  }
}

std::string ResultText(VkResult r) {
  return "VkResult " + std::to_string(r) + " (" + VkResultName(r) + ")";
}

// How to get a Vulkan driver, for the messages that lack one.
constexpr const char* kHowToGetDriver =
    "install your GPU's Vulkan driver (with the Vulkan loader, e.g. Debian's libvulkan1), or on a "
    "machine without a GPU Mesa's lavapipe (mesa-vulkan-drivers); in an ebb checkout, "
    "scripts/vulkan_env provides lavapipe";

// The loader's driver-selection variables, when set, for messages ("VK_DRIVER_FILES=...").
std::string DriverEnvText() {
  std::string out;
  for (const char* name : {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      out += std::string(out.empty() ? "" : ", ") + name + "=" + v;
      break;  // the loader reads VK_DRIVER_FILES first and ignores the older name then
    }
  }
  return out;
}

// A symbol into a function pointer type (POSIX guarantees the conversion works).
template <typename Fn>
Fn LoadSymbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(platform::LibrarySymbol(lib, name));
}

template <typename Fn>
Fn LoadInstanceProc(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, const char* name) {
  return reinterpret_cast<Fn>(gipa(instance, name));
}

// Closes the library when the listing returns, whichever way.
class LibraryCloser {
 public:
  explicit LibraryCloser(void* lib) : lib_(lib) {}
  ~LibraryCloser() { platform::CloseLibrary(lib_); }
  void Keep() { lib_ = nullptr; }  // never close it (an instance that cannot be destroyed)
  LibraryCloser(const LibraryCloser&) = delete;
  LibraryCloser& operator=(const LibraryCloser&) = delete;

 private:
  void* lib_;  // owned: one platform::OpenLibrary reference
};

std::string LoadedPath(void* lib) { return platform::LibraryPath(lib); }

// The per-device entry points. The last two are optional (a loader older than Vulkan 1.1 lacks
// vkGetPhysicalDeviceProperties2): without them driver_name and driver_info stay empty.
struct DeviceProcs {
  PFN_vkGetPhysicalDeviceProperties get_props = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties get_mem = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 get_props2 = nullptr;
  PFN_vkEnumerateDeviceExtensionProperties enum_exts = nullptr;
};

std::string FixedString(const char* s, size_t size) { return std::string(s, strnlen(s, size)); }

// Whether `device` offers the device extension `name`.
bool HasDeviceExtension(const DeviceProcs& p, VkPhysicalDevice device, const char* name) {
  if (p.enum_exts == nullptr) return false;
  std::vector<VkExtensionProperties> exts;
  VkResult r = kVkIncomplete;
  for (int attempt = 0; attempt < 4 && r == kVkIncomplete; ++attempt) {
    uint32_t n = 0;
    if (p.enum_exts(device, nullptr, &n, nullptr) != kVkSuccess || n == 0 || n > 4096) {
      return false;
    }
    exts.assign(n, VkExtensionProperties{});
    r = p.enum_exts(device, nullptr, &n, exts.data());
    if (n < exts.size()) exts.resize(n);
  }
  if (r != kVkSuccess && r != kVkIncomplete) return false;
  for (const VkExtensionProperties& e : exts) {
    if (FixedString(e.extensionName, sizeof e.extensionName) == name) return true;
  }
  return false;
}

GpuAdapter ReadAdapter(VkPhysicalDevice device, const DeviceProcs& p) {
  VkPhysicalDeviceProperties props{};
  p.get_props(device, &props);
  VkPhysicalDeviceMemoryProperties mem{};
  p.get_mem(device, &mem);

  GpuAdapter a;
  // deviceName is NUL-terminated per the spec; a driver that forgets is cut at the array's end.
  a.name = FixedString(props.deviceName, sizeof props.deviceName);
  a.type = std::string(VulkanDeviceTypeName(static_cast<uint32_t>(props.deviceType)));
  a.vendor_id = props.vendorID;
  a.device_id = props.deviceID;
  a.vendor = VulkanVendorName(props.vendorID);
  a.driver_version = DecodeVulkanDriverVersion(props.vendorID, props.driverVersion);
  a.api_version = DecodeVulkanApiVersion(props.apiVersion);
  // The instance asks for Vulkan 1.1, so the 1.2 core struct may be chained only through the
  // extension, which drivers keep listing after its promotion.
  if (p.get_props2 != nullptr && props.apiVersion >= kVkApiVersion11 &&
      HasDeviceExtension(p, device, "VK_KHR_driver_properties")) {
    VkPhysicalDeviceDriverProperties driver{};
    driver.sType = kVkStructureTypePhysicalDeviceDriverProperties;
    VkPhysicalDeviceProperties2 props2{};
    props2.sType = kVkStructureTypePhysicalDeviceProperties2;
    props2.pNext = &driver;
    p.get_props2(device, &props2);
    a.driver_name = FixedString(driver.driverName, sizeof driver.driverName);
    a.driver_info = FixedString(driver.driverInfo, sizeof driver.driverInfo);
  }
  a.max_storage_buffer_range = props.limits.maxStorageBufferRange;
  a.max_memory_allocation_count = props.limits.maxMemoryAllocationCount;
  const uint32_t n_heaps =
      mem.memoryHeapCount < kVkMaxMemoryHeaps ? mem.memoryHeapCount : kVkMaxMemoryHeaps;
  for (uint32_t i = 0; i < n_heaps; ++i) {
    const bool local = (mem.memoryHeaps[i].flags & kVkMemoryHeapDeviceLocalBit) != 0;
    a.heap_bytes.push_back(mem.memoryHeaps[i].size);
    a.heap_device_local.push_back(local);
    if (local) a.device_local_bytes += mem.memoryHeaps[i].size;
  }
  return a;
}

GpuAdapterList ListFrom(const std::string& loader_library) {
  GpuAdapterList out;
  std::string why;
  void* lib = platform::OpenLibrary(loader_library, &why);
  if (lib == nullptr) {
    out.error = "no Vulkan loader: cannot open " + loader_library + " (" +
                (why.empty() ? "dlopen failed" : why) + "); to get one, " + kHowToGetDriver;
    return out;
  }
  LibraryCloser closer(lib);
  out.loader_path_hint = LoadedPath(lib);

  const auto gipa = LoadSymbol<PFN_vkGetInstanceProcAddr>(lib, "vkGetInstanceProcAddr");
  if (gipa == nullptr) {
    out.error = loader_library + " is not a Vulkan loader: it has no vkGetInstanceProcAddr";
    return out;
  }
  out.loader_found = true;

  const auto create = LoadInstanceProc<PFN_vkCreateInstance>(gipa, nullptr, "vkCreateInstance");
  if (create == nullptr) {
    out.error = "the Vulkan loader (" + loader_library + ") does not provide vkCreateInstance";
    return out;
  }

  VkApplicationInfo app{};
  app.sType = kVkStructureTypeApplicationInfo;
  app.pApplicationName = "ebb";
  app.pEngineName = "ebb";
  app.apiVersion = kVkApiVersion11;
  VkInstanceCreateInfo info{};
  info.sType = kVkStructureTypeInstanceCreateInfo;
  info.pApplicationInfo = &app;
  VkInstance instance = nullptr;
  const VkResult created = create(&info, nullptr, &instance);
  if (created != kVkSuccess || instance == nullptr) {
    out.error = "vkCreateInstance (Vulkan 1.1) failed with " + ResultText(created);
    if (created == -9) {  // VK_ERROR_INCOMPATIBLE_DRIVER: what the loader says with no driver
      const std::string env = DriverEnvText();
      out.error += ": the loader found no usable Vulkan driver" +
                   (env.empty() ? std::string() : " (" + env + ")") + "; " + kHowToGetDriver;
    }
    return out;
  }

  const auto destroy = LoadInstanceProc<PFN_vkDestroyInstance>(gipa, instance, "vkDestroyInstance");
  const auto enumerate = LoadInstanceProc<PFN_vkEnumeratePhysicalDevices>(
      gipa, instance, "vkEnumeratePhysicalDevices");
  DeviceProcs procs;
  procs.get_props = LoadInstanceProc<PFN_vkGetPhysicalDeviceProperties>(
      gipa, instance, "vkGetPhysicalDeviceProperties");
  procs.get_mem = LoadInstanceProc<PFN_vkGetPhysicalDeviceMemoryProperties>(
      gipa, instance, "vkGetPhysicalDeviceMemoryProperties");
  procs.get_props2 = LoadInstanceProc<PFN_vkGetPhysicalDeviceProperties2>(
      gipa, instance, "vkGetPhysicalDeviceProperties2");
  procs.enum_exts = LoadInstanceProc<PFN_vkEnumerateDeviceExtensionProperties>(
      gipa, instance, "vkEnumerateDeviceExtensionProperties");
  if (destroy == nullptr) {
    // Nothing can release the instance: leaking it (and keeping the library, whose code it may
    // still reference) is the safe way out.
    out.error = "the Vulkan loader (" + loader_library + ") does not provide vkDestroyInstance";
    closer.Keep();
    return out;
  }
  if (enumerate == nullptr || procs.get_props == nullptr || procs.get_mem == nullptr) {
    out.error = "the Vulkan loader (" + loader_library +
                ") lacks vkEnumeratePhysicalDevices or vkGetPhysicalDevice(Memory)Properties";
    destroy(instance, nullptr);
    return out;
  }

  std::vector<VkPhysicalDevice> devices;
  VkResult listed = kVkIncomplete;
  for (int attempt = 0; attempt < 4 && listed == kVkIncomplete; ++attempt) {
    uint32_t n = 0;
    listed = enumerate(instance, &n, nullptr);
    if (listed != kVkSuccess) break;
    if (n > kMaxPhysicalDevices) n = kMaxPhysicalDevices;
    devices.assign(n, nullptr);
    if (n == 0) break;
    listed = enumerate(instance, &n, devices.data());  // VK_INCOMPLETE: a device came meanwhile
    devices.resize(n < devices.size() ? n : devices.size());
  }
  if (listed != kVkSuccess && !(listed == kVkIncomplete && !devices.empty())) {
    out.error = "vkEnumeratePhysicalDevices failed with " + ResultText(listed);
  } else if (devices.empty()) {
    const std::string env = DriverEnvText();
    out.error = "the Vulkan loader found no physical devices" +
                (env.empty() ? std::string() : " (" + env + ")") + "; " + kHowToGetDriver;
  } else {
    for (VkPhysicalDevice d : devices) {
      if (d != nullptr) out.adapters.push_back(ReadAdapter(d, procs));
    }
    MarkChosenGpuAdapter(out.adapters);
  }
  destroy(instance, nullptr);
  return out;
}

}  // namespace

std::string VulkanVendorName(uint32_t vendor_id) {
  switch (vendor_id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
    case 0x1022:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x10005:
      return "Mesa (software)";  // VK_VENDOR_ID_MESA: lavapipe
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x1414:
      return "Microsoft";
    default:
      break;
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", vendor_id);
  return buf;
}

std::string DecodeVulkanDriverVersion(uint32_t vendor_id, uint32_t raw) {
  char buf[48];
  if (vendor_id == 0x10DE) {
    // NVIDIA writes its versions as "580.95.05" (nvidia-smi, NVML): the third part in two digits.
    // The fourth field is 0 in every release; it is shown only when it is not.
    const unsigned patch = raw & 0x3fu;
    const int n = std::snprintf(buf, sizeof buf, "%u.%u.%02u", (raw >> 22) & 0x3ffu,
                                (raw >> 14) & 0xffu, (raw >> 6) & 0xffu);
    if (patch != 0 && n > 0) std::snprintf(buf + n, sizeof buf - n, ".%u", patch);
  } else {
    std::snprintf(buf, sizeof buf, "%u.%u.%u", raw >> 22, (raw >> 12) & 0x3ffu, raw & 0xfffu);
  }
  return buf;
}

std::string DecodeVulkanApiVersion(uint32_t raw) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%u.%u.%u", (raw >> 22) & 0x7fu, (raw >> 12) & 0x3ffu,
                raw & 0xfffu);
  return buf;
}

std::string_view VulkanDeviceTypeName(uint32_t device_type) {
  switch (device_type) {
    case 1:
      return "integrated";  // VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU
    case 2:
      return "discrete";  // VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
    case 3:
      return "virtual";  // VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU
    case 4:
      return "cpu";  // VK_PHYSICAL_DEVICE_TYPE_CPU
    default:
      return "other";  // VK_PHYSICAL_DEVICE_TYPE_OTHER and unknown values
  }
}

int DawnAdapterTypeRank(std::string_view type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "cpu") return 2;
  return 3;  // Dawn's wgpu::AdapterType::Unknown: virtual GPUs and "other"
}

int ChooseGpuAdapter(const std::vector<GpuAdapter>& adapters) {
  int best = -1;
  int best_rank = 0;
  for (size_t i = 0; i < adapters.size(); ++i) {
    const int rank = DawnAdapterTypeRank(adapters[i].type);
    if (best < 0 || rank < best_rank) {  // strictly lower: the first enumerated wins ties
      best = static_cast<int>(i);
      best_rank = rank;
    }
  }
  return best;
}

void MarkChosenGpuAdapter(std::vector<GpuAdapter>& adapters) {
  const int chosen = ChooseGpuAdapter(adapters);
  for (size_t i = 0; i < adapters.size(); ++i) {
    adapters[i].chosen = static_cast<int>(i) == chosen;
  }
}

std::string DescribeGpuAdapter(const GpuAdapter& a) {
  return a.name + " (" + a.vendor + ", " + a.type + ", Vulkan " + a.api_version + ", driver " +
         (a.driver_info.empty() ? a.driver_version : a.driver_info) + ", " +
         FormatBytes(a.device_local_bytes) + " device-local)";
}

GpuAdapterList ListGpuAdaptersFrom(const std::string& loader_library) {
  try {
    return ListFrom(loader_library);
  } catch (const std::exception& e) {  // std::bad_alloc from the strings and vectors
    GpuAdapterList out;
    out.error = std::string("listing the Vulkan adapters failed: ") + e.what();
    return out;
  }
}

GpuAdapterList ListGpuAdapters() { return ListGpuAdaptersFrom("libvulkan.so.1"); }

}  // namespace ebb::internal
