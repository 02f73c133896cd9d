// ReadProcessMemory's parser: /proc/<pid>/status fields in kB become bytes; absent fields stay -1.
#include "memory/process_memory.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ebb/json.h"

namespace ebb {
namespace {

TEST(ProcessMemory, ParsesStatusLines) {
  const char* text =
      "Name:\tebb\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   51200 kB\n"
      "RssFile:\t   40000 kB\nRssShmem:\t   11200 kB\nVmSwap:\t    1024 kB\n";
  const ProcessMemory m = internal::ParseProcessStatus(text);
  EXPECT_EQ(m.rss_bytes, 102400ll * 1024);
  EXPECT_EQ(m.peak_rss_bytes, 204800ll * 1024);
  EXPECT_EQ(m.anon_bytes, (51200ll + 1024) * 1024);  // swapped-out anonymous memory counts
  EXPECT_EQ(m.file_bytes, 40000ll * 1024);
  EXPECT_EQ(m.shmem_bytes, 11200ll * 1024);
}

TEST(ProcessMemory, AbsentFieldsStayMinusOne) {
  const ProcessMemory m = internal::ParseProcessStatus("Name:\tebb\nVmRSS:\t 8 kB\n");
  EXPECT_EQ(m.rss_bytes, 8 * 1024);
  EXPECT_EQ(m.peak_rss_bytes, -1);
  EXPECT_EQ(m.anon_bytes, -1);
  EXPECT_EQ(m.file_bytes, -1);
  EXPECT_EQ(m.shmem_bytes, -1);
}

TEST(ProcessMemory, ReadsThisProcess) {
  const ProcessMemory self = ReadProcessMemory();
  EXPECT_GT(self.rss_bytes, 0);
  EXPECT_GE(self.peak_rss_bytes, self.rss_bytes);
  EXPECT_GT(self.anon_bytes, 0);
  EXPECT_GT(self.file_bytes, 0);  // this test's own code is a mapped file
  EXPECT_GE(self.shmem_bytes, 0);
  // The split adds up (read at one instant; swap is not resident).
  const ProcessMemory again = ReadProcessMemory();
  EXPECT_NEAR(static_cast<double>(again.rss_bytes),
              static_cast<double>(again.anon_bytes + again.file_bytes + again.shmem_bytes),
              1 << 20);
}

TEST(ProcessMemory, JsonCarriesTheSplit) {
  MemoryStats s;
  s.process = internal::ParseProcessStatus(
      "VmRSS:\t 30 kB\nRssAnon:\t 10 kB\nRssFile:\t 15 kB\nRssShmem:\t 5 kB\n");
  const auto j = nlohmann::json::parse(ToJson(s));
  EXPECT_EQ(j["process"]["rss_bytes"], 30 * 1024);
  EXPECT_EQ(j["process"]["anon_bytes"], 10 * 1024);
  EXPECT_EQ(j["process"]["file_bytes"], 15 * 1024);
  EXPECT_EQ(j["process"]["shmem_bytes"], 5 * 1024);
}

}  // namespace
}  // namespace ebb
