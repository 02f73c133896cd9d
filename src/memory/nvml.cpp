#include "memory/nvml.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "platform/dynlib.h"
#include "platform/process.h"

namespace ebb::internal {
namespace {

// ---- The NVML ABI, declared here (no NVML headers are installed) ------------------------------
// Each declaration follows NVIDIA's nvml.h definition of the name in its comment.

using nvmlReturn_t = int;  // enum nvmlReturn_enum (int-sized)
struct nvmlDevice_st;      // typedef struct nvmlDevice_st* nvmlDevice_t (opaque)
using nvmlDevice_t = nvmlDevice_st*;

constexpr nvmlReturn_t kNvmlSuccess = 0;                // NVML_SUCCESS
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
// NVML_VALUE_NOT_AVAILABLE, as nvmlProcessInfo_v2_t::usedGpuMemory holds it (e.g. on Windows
// WDDM, or without the permission to see other containers' figures).
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;
constexpr unsigned int kNvmlDeviceNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned int kNvmlDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// nvmlMemory_t (nvmlMemory_st, the v1 struct that nvmlDeviceGetMemoryInfo fills), bytes.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlProcessInfo_v2_t (nvmlProcessInfo_v2_st), what the _v2 process listings fill. (nvml.h of
// CUDA 12 names the same layout nvmlProcessInfo_t and uses it for the _v3 listings too.)
struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or NVML_VALUE_NOT_AVAILABLE
  unsigned int gpuInstanceId;        // MIG; 0xFFFFFFFF when MIG is off
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
static_assert(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory) == 8);

// nvmlDeviceGetComputeRunningProcesses_v2 and nvmlDeviceGetGraphicsRunningProcesses_v2.
using ListFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*);

// The entry points (nvml.h's prototypes; DECLDIR is empty on Linux). The two listings may be
// null (older drivers).
struct NvmlApi {
  nvmlReturn_t (*init_v2)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_get_count_v2)(unsigned int*);
  nvmlReturn_t (*device_get_handle_by_index_v2)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*device_get_name)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*system_get_driver_version)(char*, unsigned int);
  nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t, nvmlMemory_t*);
  ListFn device_get_compute_running_processes_v2;
  ListFn device_get_graphics_running_processes_v2;
};

// The process-wide state: written once inside std::call_once, read-only afterwards (call_once
// orders the write before every reader's return from it), so readers need no lock.
struct NvmlState {
  std::once_flag once;
  bool ok = false;    // library opened, entry points found, nvmlInit_v2 succeeded
  std::string error;  // why not, when !ok
  NvmlApi api{};
};

NvmlState& State() {
  // Never destroyed: threads still running at exit may use it (and NVML stays initialised).
  static NvmlState* state = new NvmlState;
  return *state;
}

template <typename Fn>
bool Load(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(platform::LibrarySymbol(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

std::string ErrorText(const NvmlApi& api, nvmlReturn_t r) {
  const char* s = api.error_string != nullptr ? api.error_string(r) : nullptr;
  return (s != nullptr ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(r) +
         ")";
}

void Initialise(NvmlState& st) {
  std::string why;
  void* lib = platform::OpenLibrary("libnvidia-ml.so.1", &why);
  if (lib == nullptr) {
    st.error = std::string("no libnvidia-ml.so.1 (no NVIDIA driver): ") +
               (why.empty() ? "dlopen failed" : why);
    return;
  }
  NvmlApi& a = st.api;
  std::string missing;
  Load(lib, "nvmlErrorString", a.error_string, missing);
  Load(lib, "nvmlInit_v2", a.init_v2, missing);
  Load(lib, "nvmlDeviceGetCount_v2", a.device_get_count_v2, missing);
  Load(lib, "nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index_v2, missing);
  Load(lib, "nvmlDeviceGetName", a.device_get_name, missing);
  Load(lib, "nvmlSystemGetDriverVersion", a.system_get_driver_version, missing);
  Load(lib, "nvmlDeviceGetMemoryInfo", a.device_get_memory_info, missing);
  if (!missing.empty()) {
    st.error = "libnvidia-ml.so.1 lacks " + missing + " (an NVIDIA driver too old for ebb)";
    st.api = NvmlApi{};
    platform::CloseLibrary(lib);
    return;
  }
  // The process listings are optional (drivers before CUDA 11's NVML lack the _v2 versions, and
  // calling the _v1 ones with the v2 struct would misread it): without them process_bytes is -1.
  a.device_get_compute_running_processes_v2 = reinterpret_cast<ListFn>(
      platform::LibrarySymbol(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
  a.device_get_graphics_running_processes_v2 = reinterpret_cast<ListFn>(
      platform::LibrarySymbol(lib, "nvmlDeviceGetGraphicsRunningProcesses_v2"));
  const nvmlReturn_t r = a.init_v2();
  if (r != kNvmlSuccess) {
    st.error = "nvmlInit failed: " + ErrorText(a, r);
    st.api = NvmlApi{};
    platform::CloseLibrary(lib);
    return;
  }
  st.ok = true;  // `lib` stays open for the process's life (see nvml.h)
}

// This pid's memory in one listing, bytes: the sum of its entries with a known figure; -1 when
// the listing is missing, fails or has no such entry.
int64_t PidBytes(ListFn list, nvmlDevice_t device, unsigned int pid) {
  if (list == nullptr) return -1;
  std::vector<nvmlProcessInfo_v2_t> infos(16);
  unsigned int n = 0;
  nvmlReturn_t r = kNvmlErrorInsufficientSize;
  // NVML_ERROR_INSUFFICIENT_SIZE sets n to the count needed; processes may start in between, so
  // grow with room to spare, a few times at most.
  for (int attempt = 0; attempt < 5 && r == kNvmlErrorInsufficientSize; ++attempt) {
    n = static_cast<unsigned int>(infos.size());
    r = list(device, &n, infos.data());
    if (r == kNvmlErrorInsufficientSize) {
      const size_t want = static_cast<size_t>(n) + n / 2 + 16;
      infos.resize(want > infos.size() * 2 ? want : infos.size() * 2);
    }
  }
  if (r != kNvmlSuccess) return -1;
  int64_t bytes = -1;
  for (unsigned int i = 0; i < n && i < infos.size(); ++i) {
    const nvmlProcessInfo_v2_t& p = infos[i];
    if (p.pid != pid || p.usedGpuMemory == kNvmlValueNotAvailable) continue;
    bytes = (bytes < 0 ? 0 : bytes) + static_cast<int64_t>(p.usedGpuMemory);
  }
  return bytes;
}

NvmlMemory Read() {
  NvmlState& st = State();
  std::call_once(st.once, [&st] { Initialise(st); });
  NvmlMemory m;
  if (!st.ok) {
    m.error = st.error;
    return m;
  }
  const NvmlApi& a = st.api;
  unsigned int count = 0;
  const nvmlReturn_t rc = a.device_get_count_v2(&count);
  if (rc != kNvmlSuccess) {
    m.error = "nvmlDeviceGetCount failed: " + ErrorText(a, rc);
    return m;
  }
  m.available = true;
  m.device_count = static_cast<int>(count);

  char version[kNvmlDriverVersionBufferSize] = {};
  if (a.system_get_driver_version(version, sizeof version) == kNvmlSuccess) {
    m.driver_version.assign(version, strnlen(version, sizeof version));
  }

  const auto pid = static_cast<unsigned int>(platform::CurrentPid());
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (a.device_get_handle_by_index_v2(i, &device) != kNvmlSuccess || device == nullptr) continue;
    if (i == 0) {
      char name[kNvmlDeviceNameBufferSize] = {};
      if (a.device_get_name(device, name, sizeof name) == kNvmlSuccess) {
        m.device_name.assign(name, strnlen(name, sizeof name));
      }
    }
    nvmlMemory_t mem{};
    if (a.device_get_memory_info(device, &mem) == kNvmlSuccess) {
      m.device_used_bytes =
          (m.device_used_bytes < 0 ? 0 : m.device_used_bytes) + static_cast<int64_t>(mem.used);
      m.device_total_bytes =
          (m.device_total_bytes < 0 ? 0 : m.device_total_bytes) + static_cast<int64_t>(mem.total);
    }
    const int64_t compute = PidBytes(a.device_get_compute_running_processes_v2, device, pid);
    const int64_t graphics = PidBytes(a.device_get_graphics_running_processes_v2, device, pid);
    const int64_t here = compute > graphics ? compute : graphics;  // the same memory, listed twice
    if (here >= 0) m.process_bytes = (m.process_bytes < 0 ? 0 : m.process_bytes) + here;
  }
  return m;
}

}  // namespace

NvmlMemory ReadNvmlMemory() {
  try {
    return Read();
  } catch (const std::exception& e) {  // std::bad_alloc, std::system_error from call_once
    NvmlMemory m;
    m.error = std::string("reading NVML failed: ") + e.what();
    return m;
  }
}

}  // namespace ebb::internal
