#include "ort/webgpu_options.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/options.h"

namespace ebb::internal {
namespace {

constexpr std::string_view kPrefix = "ep.webgpuexecutionprovider.";

enum class Kind { kChoice, kBool01, kUint };

struct Key {
  std::string_view name;
  Kind kind;
  std::string_view choices;  // kChoice: '|'-separated, in ORT's spelling
  bool context;              // fixed by the first session on the device
  std::string_view doc;
};

// ORT 1.30's keys (webgpu_provider_options.h; defaults read from its verbose log).
constexpr Key kKeys[] = {
    {"deviceId", Kind::kUint, "", true,
     "ORT's WebGPU context id (0: the one ORT creates; others need webgpuInstance/webgpuDevice)"},
    {"storageBufferCacheMode", Kind::kChoice, "disabled|lazyRelease|simple|bucket", true,
     "what ORT does with a freed storage buffer (activations, KV): ebb default lazyRelease"},
    {"uniformBufferCacheMode", Kind::kChoice, "disabled|lazyRelease|simple|bucket", true,
     "the same for uniform buffers (ORT default simple)"},
    {"queryResolveBufferCacheMode", Kind::kChoice, "disabled|lazyRelease|simple|bucket", true,
     "the same for query-resolve buffers (ORT default disabled)"},
    {"defaultBufferCacheMode", Kind::kChoice, "disabled|lazyRelease|simple|bucket", true,
     "the same for other buffers (ORT default disabled)"},
    {"validationMode", Kind::kChoice, "disabled|wgpuOnly|basic|full", true,
     "Dawn's validation (ORT default basic)"},
    {"dawnBackendType", Kind::kChoice, "Vulkan|D3D12", true,
     "the native API (default: Dawn's choice, Vulkan on Linux)"},
    {"powerPreference", Kind::kChoice, "high-performance|low-power", true,
     "which adapter Dawn prefers (ORT default high-performance)"},
    {"preserveDevice", Kind::kBool01, "", true,
     "keep the device (and its caches) after the last session on it ends (ORT default 0)"},
    {"enableRobustness", Kind::kBool01, "", true, "Dawn's robust buffer access (ORT default 0)"},
    {"maxStorageBufferBindingSize", Kind::kUint, "", true,
     "bytes; 0 = the adapter's limit, else at least 134217728"},
    {"maxNumPendingDispatches", Kind::kUint, "", true, "1 to 4096 (ORT default 16)"},
    {"enableGraphCapture", Kind::kBool01, "", false,
     "record the dispatches once and replay them (needs every input on the device; ORT default "
     "0)"},
    {"preferredLayout", Kind::kChoice, "NCHW|NHWC", false, "ORT default NHWC"},
    {"enableInt64", Kind::kBool01, "", false, "int64 kernels on the device (ORT default 0)"},
    {"sessionBufferPoolGenerations", Kind::kUint, "", false, "graph capture only (ORT default 1)"},
    {"forceCpuNodeNames", Kind::kChoice, "", false, "node names to keep on the CPU, one a line"},
    {"kvCacheQuantizationBits", Kind::kChoice, "0|4|8", false, "ORT default 0"},
};

// ebb's own keys in provider_options.webgpu (never given to ORT).
constexpr std::string_view kGpuMemLimit = "gpu_mem_limit";

const Key* FindKey(std::string_view name) {
  for (const Key& k : kKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string CheckValue(const Key& key, const std::string& value, const std::string& where) {
  const std::string full = "provider_options.webgpu." + std::string(key.name);
  switch (key.kind) {
    case Kind::kBool01:
      return ParseBool(full, value) ? "1" : "0";
    case Kind::kUint: {
      int64_t max = INT64_MAX;
      if (key.name == "maxNumPendingDispatches") max = 4096;
      if (key.name == "deviceId") max = 1024;
      const int64_t v =
          ParseInt(full, Trim(value), key.name == "maxNumPendingDispatches" ? 1 : 0, max);
      if (key.name == "maxStorageBufferBindingSize" && v != 0 && v < 134217728) {
        throw Error(ErrorCode::InvalidArgument,
                    full + "=" + value + " (" + where +
                        "): ONNX Runtime needs 0 (the adapter's limit) or at least 134217728");
      }
      return std::to_string(v);
    }
    case Kind::kChoice: {
      if (key.choices.empty()) return value;  // free text (forceCpuNodeNames)
      for (const std::string& c : Split(key.choices, '|')) {
        if (Lower(c) == Lower(Trim(value))) return c;
      }
      std::string list(key.choices);
      std::replace(list.begin(), list.end(), '|', ' ');
      throw Error(ErrorCode::InvalidArgument, full + "='" + EscapeForMessage(value, 64) + "' (" +
                                                  where + ") is not one of: " + list);
    }
  }
  return value;
}

// Devices whose context options are recorded, with their holders.
struct ContextRecord {
  std::map<std::string, std::string> options;
  std::string first_model;
  int leases = 0;
};
std::mutex g_mu;
std::map<int, ContextRecord>& Contexts() {
  static auto* contexts = new std::map<int, ContextRecord>();  // never destroyed: leases may
  return *contexts;                                            // end during static teardown
}

std::string Describe(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

}  // namespace

WebGpuOptions ParseWebGpuOptions(const std::map<std::string, std::string>& options,
                                 const std::string& where) {
  WebGpuOptions out;
  for (const auto& [raw_key, value] : options) {
    std::string key = raw_key;
    if (key.starts_with(kPrefix)) key = key.substr(kPrefix.size());
    if (key == kGpuMemLimit) {
      out.gpu_mem_limit_bytes = ParseByteSize(value, "provider_options.webgpu.gpu_mem_limit");
      continue;
    }
    if (const Key* k = FindKey(key)) {
      out.ort[key] = CheckValue(*k, value, where);
      continue;
    }
    std::vector<std::string_view> names{kGpuMemLimit};
    for (const Key& k : kKeys) names.push_back(k.name);
    if (value.empty()) {
      throw Error(ErrorCode::InvalidArgument, "provider_options.webgpu." + key + " (" + where +
                                                  "): an empty value; ONNX Runtime refuses it");
    }
    out.unknown.push_back("provider option webgpu." + key + "='" + value + "' (" + where +
                          ") is not one ebb knows; passed to ONNX Runtime as "
                          "ep.webgpuexecutionprovider." +
                          key + ", which ignores keys it does not know" + DidYouMean(key, names));
    out.ort[key] = value;
  }
  // ebb's default: freed buffers go back to Dawn at the end of the run (see the header).
  out.ort.emplace("storageBufferCacheMode", "lazyRelease");
  if (auto it = out.ort.find("deviceId"); it != out.ort.end())
    out.device_id = std::stoi(it->second);
  for (const auto& [k, v] : out.ort) {
    const Key* key = FindKey(k);
    if (key != nullptr && key->context) out.context[k] = v;
  }
  return out;
}

std::string DescribeWebGpuKeys() {
  std::string s = "  gpu_mem_limit: ebb's device budget in bytes (weights + KV + what ebb keeps)\n";
  for (const Key& k : kKeys) {
    s += "  " + std::string(k.name) + ": " + std::string(k.doc);
    if (!k.choices.empty()) s += " [" + std::string(k.choices) + "]";
    s += "\n";
  }
  return s;
}

WebGpuContextLease::~WebGpuContextLease() {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Contexts().find(device_id_);
  if (it != Contexts().end() && --it->second.leases == 0) Contexts().erase(it);
}

std::unique_ptr<WebGpuContextLease> AcquireWebGpuContext(const WebGpuOptions& options,
                                                         const std::string& model) {
  std::lock_guard<std::mutex> lock(g_mu);
  ContextRecord& r = Contexts()[options.device_id];
  if (r.leases > 0 && r.options != options.context) {
    throw Error(ErrorCode::InvalidArgument,
                "model '" + model + "' asks for WebGPU device " +
                    std::to_string(options.device_id) + " with " + Describe(options.context) +
                    ", but model '" + r.first_model + "' holds that device with " +
                    Describe(r.options) +
                    ": ONNX Runtime shares one device (and its buffer cache) between all the "
                    "sessions on it and keeps the first one's options. Load this model with the "
                    "same provider_options.webgpu values, or unload the others first");
  }
  if (r.leases == 0) {
    r.options = options.context;
    r.first_model = model;
  }
  ++r.leases;
  return std::unique_ptr<WebGpuContextLease>(new WebGpuContextLease(options.device_id));
}

}  // namespace ebb::internal
