// NVIDIA's management library opened at run time (memory/nvml.h): on a machine without the
// NVIDIA driver, ReadNvmlMemory() reports why, with no figures; with it, coherent figures. Either
// way it is safe from many threads at once, including the first (initialising) call.
#include "memory/nvml.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <iostream>
#include <thread>
#include <vector>

namespace ebb::internal {
namespace {

bool NvmlLibraryPresent() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

void ExpectCoherent(const NvmlMemory& m) {
  if (!m.available) {
    EXPECT_FALSE(m.error.empty());
    EXPECT_EQ(m.process_bytes, -1);
    EXPECT_EQ(m.device_used_bytes, -1);
    EXPECT_EQ(m.device_total_bytes, -1);
    EXPECT_EQ(m.device_count, 0);
    EXPECT_TRUE(m.device_name.empty());
    EXPECT_TRUE(m.driver_version.empty());
    return;
  }
  EXPECT_TRUE(m.error.empty()) << m.error;
  EXPECT_GE(m.device_count, 0);
  EXPECT_FALSE(m.driver_version.empty());
  if (m.device_count > 0) {
    EXPECT_FALSE(m.device_name.empty());
    EXPECT_GT(m.device_total_bytes, 0);
    EXPECT_GE(m.device_used_bytes, 0);
    EXPECT_LE(m.device_used_bytes, m.device_total_bytes);
  }
  EXPECT_GE(m.process_bytes, -1);
  if (m.process_bytes >= 0 && m.device_used_bytes >= 0) {
    EXPECT_LE(m.process_bytes, m.device_used_bytes);
  }
}

// The first call runs here, from many threads at once: the one-time initialisation must be
// race-free (ASan/TSan builds check it) and every thread must see the same outcome.
TEST(Nvml, ConcurrentFirstCallsAgree) {
  std::vector<NvmlMemory> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&got, i] {
      for (int k = 0; k < 20; ++k) got[i] = ReadNvmlMemory();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const NvmlMemory& m : got) {
    ExpectCoherent(m);
    EXPECT_EQ(m.available, got[0].available);
    EXPECT_EQ(m.error, got[0].error);
    EXPECT_EQ(m.device_count, got[0].device_count);
    EXPECT_EQ(m.device_name, got[0].device_name);
    EXPECT_EQ(m.driver_version, got[0].driver_version);
  }
}

TEST(Nvml, ThisMachine) {
  const NvmlMemory m = ReadNvmlMemory();
  std::cout << "[ nvml     ] available=" << m.available << " error=\"" << m.error
            << "\" devices=" << m.device_count << " name=\"" << m.device_name << "\" driver=\""
            << m.driver_version << "\" process_bytes=" << m.process_bytes
            << " used=" << m.device_used_bytes << " total=" << m.device_total_bytes << "\n";
  ExpectCoherent(m);
  if (!NvmlLibraryPresent()) {
    // No NVIDIA driver: not an error, and the reason names the library.
    EXPECT_FALSE(m.available);
    EXPECT_NE(m.error.find("libnvidia-ml.so.1"), std::string::npos) << m.error;
    EXPECT_NE(m.error.find("no NVIDIA driver"), std::string::npos) << m.error;
  }
}

}  // namespace
}  // namespace ebb::internal
