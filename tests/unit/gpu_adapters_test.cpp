// The Vulkan adapter listing (memory/gpu_adapters.h): the pure helpers (vendor names, driver and
// API version decoding, Dawn's choice rule, the one-line description) without a GPU, and
// ListGpuAdapters() on this machine: without a Vulkan loader it must say how to get one; under
// scripts/vulkan_env (VK_DRIVER_FILES set) it must list Mesa's lavapipe as the chosen adapter.
#include "memory/gpu_adapters.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

namespace ebb::internal {
namespace {

GpuAdapter Adapter(std::string name, std::string type) {
  GpuAdapter a;
  a.name = std::move(name);
  a.type = std::move(type);
  return a;
}

TEST(GpuAdapters, VendorNames) {
  EXPECT_EQ(VulkanVendorName(0x10DE), "NVIDIA");
  EXPECT_EQ(VulkanVendorName(0x1002), "AMD");
  EXPECT_EQ(VulkanVendorName(0x1022), "AMD");
  EXPECT_EQ(VulkanVendorName(0x8086), "Intel");
  EXPECT_EQ(VulkanVendorName(0x10005), "Mesa (software)");  // VK_VENDOR_ID_MESA: lavapipe
  EXPECT_EQ(VulkanVendorName(0x13B5), "ARM");
  EXPECT_EQ(VulkanVendorName(0x5143), "Qualcomm");
  EXPECT_EQ(VulkanVendorName(0x106B), "Apple");
  EXPECT_EQ(VulkanVendorName(0x1414), "Microsoft");
  EXPECT_EQ(VulkanVendorName(0x1234), "0x1234");
  EXPECT_EQ(VulkanVendorName(0xABCD), "0xabcd");
  EXPECT_EQ(VulkanVendorName(0), "0x0");
}

TEST(GpuAdapters, NvidiaDriverVersionUsesTen8Eight6Packing) {
  // 580.95.05: major 580 << 22 | minor 95 << 14 | sub 5 << 6 | 0.
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, 2434253120u), "580.95.05");
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, (535u << 22) | (183u << 14) | (1u << 6)),
            "535.183.01");
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, (580u << 22) | (159u << 14) | (4u << 6)),
            "580.159.04");
  // The fourth field, 0 in every release so far, is shown only when set.
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, (550u << 22) | (54u << 14) | (14u << 6) | 3u),
            "550.54.14.3");
  // Field limits: 10, 8, 8 and 6 bits.
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, 0xFFFFFFFFu), "1023.255.255.63");
}

TEST(GpuAdapters, OtherDriversUseVkMakeVersion) {
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10005, 104857607u), "25.0.7");  // Mesa 25.0.7
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10005, (22u << 22) | (3u << 12) | 6u), "22.3.6");
  EXPECT_EQ(DecodeVulkanDriverVersion(0x1002, (2u << 22) | (0u << 12) | 302u), "2.0.302");
  EXPECT_EQ(DecodeVulkanDriverVersion(0x8086, (24u << 22) | (1u << 12) | 4095u), "24.1.4095");
  // The same number reads differently for NVIDIA: the vendor decides the packing.
  EXPECT_EQ(DecodeVulkanDriverVersion(0x10DE, 104857607u), "25.0.00.7");
}

TEST(GpuAdapters, ApiVersion) {
  EXPECT_EQ(DecodeVulkanApiVersion((1u << 22) | (3u << 12) | 277u), "1.3.277");
  EXPECT_EQ(DecodeVulkanApiVersion((1u << 22) | (4u << 12) | 305u), "1.4.305");
  EXPECT_EQ(DecodeVulkanApiVersion((1u << 22) | (1u << 12)), "1.1.0");
  // The variant (top 3 bits; 0 for Vulkan) is not part of major.
  EXPECT_EQ(DecodeVulkanApiVersion((1u << 29) | (1u << 22) | (2u << 12) | 9u), "1.2.9");
}

TEST(GpuAdapters, DeviceTypeNames) {
  EXPECT_EQ(VulkanDeviceTypeName(0), "other");
  EXPECT_EQ(VulkanDeviceTypeName(1), "integrated");
  EXPECT_EQ(VulkanDeviceTypeName(2), "discrete");
  EXPECT_EQ(VulkanDeviceTypeName(3), "virtual");
  EXPECT_EQ(VulkanDeviceTypeName(4), "cpu");
  EXPECT_EQ(VulkanDeviceTypeName(5), "other");
  EXPECT_EQ(VulkanDeviceTypeName(0x7FFFFFFF), "other");
}

TEST(GpuAdapters, ChoiceFollowsDawnHighPerformanceOrder) {
  EXPECT_EQ(ChooseGpuAdapter({}), -1);
  // Discrete beats everything; the first discrete of two wins.
  EXPECT_EQ(ChooseGpuAdapter({Adapter("llvmpipe", "cpu"), Adapter("iGPU", "integrated"),
                              Adapter("dGPU0", "discrete"), Adapter("dGPU1", "discrete")}),
            2);
  EXPECT_EQ(ChooseGpuAdapter({Adapter("llvmpipe", "cpu"), Adapter("iGPU", "integrated")}), 1);
  // Dawn maps a virtual GPU to wgpu::AdapterType::Unknown, ranked after the CPU adapter.
  EXPECT_EQ(ChooseGpuAdapter({Adapter("virtio", "virtual"), Adapter("llvmpipe", "cpu")}), 1);
  EXPECT_EQ(ChooseGpuAdapter({Adapter("virtio", "virtual"), Adapter("iGPU", "integrated")}), 1);
  // Virtual and other share Dawn's Unknown rank: the first enumerated wins.
  EXPECT_EQ(ChooseGpuAdapter({Adapter("x", "other"), Adapter("virtio", "virtual")}), 0);
  EXPECT_EQ(ChooseGpuAdapter({Adapter("virtio", "virtual"), Adapter("x", "other")}), 0);
  EXPECT_EQ(ChooseGpuAdapter({Adapter("llvmpipe", "cpu")}), 0);

  EXPECT_LT(DawnAdapterTypeRank("discrete"), DawnAdapterTypeRank("integrated"));
  EXPECT_LT(DawnAdapterTypeRank("integrated"), DawnAdapterTypeRank("cpu"));
  EXPECT_LT(DawnAdapterTypeRank("cpu"), DawnAdapterTypeRank("virtual"));
  EXPECT_EQ(DawnAdapterTypeRank("virtual"), DawnAdapterTypeRank("other"));
  EXPECT_EQ(DawnAdapterTypeRank("something else"), DawnAdapterTypeRank("other"));
}

TEST(GpuAdapters, MarkChosenSetsExactlyOne) {
  std::vector<GpuAdapter> v = {Adapter("a", "cpu"), Adapter("b", "discrete"),
                               Adapter("c", "integrated")};
  v[0].chosen = true;  // stale marks are cleared
  v[2].chosen = true;
  MarkChosenGpuAdapter(v);
  EXPECT_FALSE(v[0].chosen);
  EXPECT_TRUE(v[1].chosen);
  EXPECT_FALSE(v[2].chosen);
  std::vector<GpuAdapter> none;
  MarkChosenGpuAdapter(none);  // no adapters: nothing to do, no crash
}

TEST(GpuAdapters, DescribeText) {
  GpuAdapter h200 = Adapter("NVIDIA H200", "discrete");
  h200.vendor_id = 0x10DE;
  h200.vendor = VulkanVendorName(h200.vendor_id);
  h200.api_version = DecodeVulkanApiVersion((1u << 22) | (4u << 12) | 312u);
  h200.driver_version = DecodeVulkanDriverVersion(0x10DE, (580u << 22) | (159u << 14) | (4u << 6));
  h200.device_local_bytes = 150754820096ull;  // what the H200's Vulkan driver and NVML report
  // As an H200 with driver 580.159.04 gave it (its driverInfo is "580.159.04", the same).
  EXPECT_EQ(DescribeGpuAdapter(h200),
            "NVIDIA H200 (NVIDIA, discrete, Vulkan 1.4.312, driver 580.159.04, 140.40 GiB "
            "device-local)");

  // lavapipe: its driverVersion is 1 ("0.0.1"); driverInfo names the Mesa release instead.
  GpuAdapter lvp = Adapter("llvmpipe (LLVM 15.0.6, 256 bits)", "cpu");
  lvp.vendor = VulkanVendorName(0x10005);
  lvp.api_version = "1.4.305";
  lvp.driver_version = DecodeVulkanDriverVersion(0x10005, 1u);
  EXPECT_EQ(lvp.driver_version, "0.0.1");
  lvp.device_local_bytes = 2ull << 30;
  EXPECT_EQ(DescribeGpuAdapter(lvp),
            "llvmpipe (LLVM 15.0.6, 256 bits) (Mesa (software), cpu, Vulkan 1.4.305, driver "
            "0.0.1, 2.00 GiB device-local)");
  lvp.driver_name = "llvmpipe";
  lvp.driver_info = "Mesa 25.0.7 (LLVM 15.0.6)";
  EXPECT_EQ(DescribeGpuAdapter(lvp),
            "llvmpipe (LLVM 15.0.6, 256 bits) (Mesa (software), cpu, Vulkan 1.4.305, driver Mesa "
            "25.0.7 (LLVM 15.0.6), 2.00 GiB device-local)");
}

TEST(GpuAdapters, MissingLoaderSaysHowToGetOne) {
  const GpuAdapterList l = ListGpuAdaptersFrom("/nonexistent/ebb-test/libvulkan.so.1");
  EXPECT_FALSE(l.loader_found);
  EXPECT_TRUE(l.adapters.empty());
  EXPECT_TRUE(l.loader_path_hint.empty());
  EXPECT_NE(l.error.find("/nonexistent/ebb-test/libvulkan.so.1"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("Vulkan driver"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("lavapipe"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("scripts/vulkan_env"), std::string::npos) << l.error;
}

TEST(GpuAdapters, LibraryThatIsNotALoaderIsAnErrorNotACrash) {
  const GpuAdapterList l = ListGpuAdaptersFrom("libm.so.6");
  EXPECT_FALSE(l.loader_found);
  EXPECT_TRUE(l.adapters.empty());
  EXPECT_NE(l.error.find("not a Vulkan loader"), std::string::npos) << l.error;
  EXPECT_NE(l.error.find("vkGetInstanceProcAddr"), std::string::npos) << l.error;
  EXPECT_NE(l.loader_path_hint.find("libm.so.6"), std::string::npos) << l.loader_path_hint;
}

bool UnderVulkanEnv() {
  const char* v = std::getenv("VK_DRIVER_FILES");
  return v != nullptr && *v != '\0';
}

// This machine: under scripts/vulkan_env, exactly lavapipe; otherwise, without a loader, the
// error says how to get one (on a machine with a real Vulkan driver, whatever it has, coherent).
TEST(GpuAdapters, ListsThisMachine) {
  const GpuAdapterList l = ListGpuAdapters();
  for (const GpuAdapter& a : l.adapters) {
    std::cout << "[ adapter  ] " << (a.chosen ? "* " : "  ") << DescribeGpuAdapter(a)
              << " vendor_id=0x" << std::hex << a.vendor_id << " device_id=0x" << a.device_id
              << std::dec << " maxStorageBufferRange=" << a.max_storage_buffer_range
              << " maxMemoryAllocationCount=" << a.max_memory_allocation_count
              << " heaps=" << a.heap_bytes.size() << " driver_version=" << a.driver_version
              << " driver_name=\"" << a.driver_name << "\"\n";
  }
  if (!l.error.empty()) std::cout << "[ error    ] " << l.error << "\n";
  std::cout << "[ loader   ] " << (l.loader_path_hint.empty() ? "(none)" : l.loader_path_hint)
            << "\n";

  if (UnderVulkanEnv()) {
    ASSERT_TRUE(l.loader_found) << l.error;
    ASSERT_TRUE(l.error.empty()) << l.error;
    EXPECT_NE(l.loader_path_hint.find(".deps/vulkan/lib/libvulkan.so.1"), std::string::npos)
        << l.loader_path_hint;
    ASSERT_EQ(l.adapters.size(), 1u);  // VK_DRIVER_FILES: the loader uses lavapipe only
    const GpuAdapter& a = l.adapters[0];
    EXPECT_TRUE(a.chosen);
    EXPECT_EQ(a.type, "cpu");
    EXPECT_EQ(a.name.rfind("llvmpipe", 0), 0u) << a.name;
    EXPECT_EQ(a.vendor_id, 0x10005u);
    EXPECT_EQ(a.vendor, "Mesa (software)");
    EXPECT_EQ(a.api_version.rfind("1.", 0), 0u) << a.api_version;
    EXPECT_FALSE(a.driver_version.empty());  // lavapipe reports driverVersion 1: "0.0.1"
    // VK_KHR_driver_properties, which lavapipe offers: the Mesa release.
    EXPECT_EQ(a.driver_name, "llvmpipe");
    EXPECT_EQ(a.driver_info.rfind("Mesa ", 0), 0u) << a.driver_info;
    ASSERT_FALSE(a.heap_bytes.empty());
    ASSERT_EQ(a.heap_bytes.size(), a.heap_device_local.size());
    uint64_t local = 0;
    for (size_t i = 0; i < a.heap_bytes.size(); ++i) {
      if (a.heap_device_local[i]) local += a.heap_bytes[i];
    }
    EXPECT_EQ(a.device_local_bytes, local);
    EXPECT_GT(a.device_local_bytes, 0u);  // lavapipe's one heap is device-local system memory
    EXPECT_GE(a.max_storage_buffer_range, 1u << 27);  // Vulkan's required minimum: 2^27
    EXPECT_GE(a.max_memory_allocation_count, 4096u);  // Vulkan's required minimum
    const std::string d = DescribeGpuAdapter(a);
    EXPECT_EQ(d.rfind(a.name + " (Mesa (software), cpu, Vulkan 1.", 0), 0u) << d;
    EXPECT_NE(d.find(", driver " + a.driver_info + ", "), std::string::npos) << d;
    EXPECT_NE(d.find(" device-local)"), std::string::npos) << d;
  } else if (!l.loader_found) {
    EXPECT_TRUE(l.adapters.empty());
    EXPECT_NE(l.error.find("libvulkan.so.1"), std::string::npos) << l.error;
    EXPECT_NE(l.error.find("install your GPU's Vulkan driver"), std::string::npos) << l.error;
    EXPECT_NE(l.error.find("lavapipe"), std::string::npos) << l.error;
    EXPECT_NE(l.error.find("scripts/vulkan_env"), std::string::npos) << l.error;
  } else {
    // A machine with a Vulkan loader of its own: a list with one chosen adapter, or a reason.
    int chosen = 0;
    for (const GpuAdapter& a : l.adapters) chosen += a.chosen ? 1 : 0;
    if (l.adapters.empty()) {
      EXPECT_FALSE(l.error.empty());
    } else {
      EXPECT_TRUE(l.error.empty()) << l.error;
      EXPECT_EQ(chosen, 1);
      EXPECT_TRUE(l.adapters[ChooseGpuAdapter(l.adapters)].chosen);
    }
  }
}

TEST(GpuAdapters, ConcurrentListingsAgree) {
  const GpuAdapterList first = ListGpuAdapters();
  std::vector<GpuAdapterList> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] { got[i] = ListGpuAdapters(); });
  }
  for (std::thread& t : threads) t.join();
  for (const GpuAdapterList& l : got) {
    EXPECT_EQ(l.loader_found, first.loader_found);
    EXPECT_EQ(l.error, first.error);
    ASSERT_EQ(l.adapters.size(), first.adapters.size());
    for (size_t i = 0; i < l.adapters.size(); ++i) {
      EXPECT_EQ(DescribeGpuAdapter(l.adapters[i]), DescribeGpuAdapter(first.adapters[i]));
      EXPECT_EQ(l.adapters[i].chosen, first.adapters[i].chosen);
    }
  }
}

}  // namespace
}  // namespace ebb::internal
