// The platform seam (src/platform/): its Linux implementation on its own, and the failure paths of
// the code above it, made testable by platform/testing.h's fault injection: a refused anonymous
// map in the KV pool and the batched-decode region (a clear ResourceExhausted, nothing charged or
// leaked, the old region kept), a full disk (ENOSPC) while the model cache aligns an entry's files
// and while the last-logits rewrite writes its memory file, a failed fsync.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/pages.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "kv/batch_kv_region.h"
#include "kv/kv_pool.h"
#include "model/last_logits.h"
#include "model/prepacked_align.h"
#include "model/proto_wire.h"
#include "platform/file.h"
#include "platform/testing.h"
#include "platform/vm.h"
#include "test_env.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;
using platform::testing::Op;

// Every test starts and ends with no failure armed.
class PlatformTest : public ::testing::Test {
 protected:
  void SetUp() override { platform::testing::ClearFailures(); }
  void TearDown() override { platform::testing::ClearFailures(); }
};

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// ---- The seam itself ----------------------------------------------------------------------------

TEST_F(PlatformTest, FailNextFailsExactlyTheArmedCallsThenRunsNormally) {
  platform::testing::FailNext(Op::kMapAnonymous, ENOMEM, 2);
  for (int i = 0; i < 2; ++i) {
    const platform::MapResult m = platform::MapAnonymous(platform::PageSize());
    EXPECT_EQ(m.addr, nullptr);
    EXPECT_EQ(m.err, ENOMEM);
  }
  const platform::MapResult m = platform::MapAnonymous(platform::PageSize());
  ASSERT_NE(m.addr, nullptr);
  EXPECT_EQ(m.err, 0);
  EXPECT_EQ(platform::Unmap(m.addr, platform::PageSize()), 0);
}

TEST_F(PlatformTest, FileWritesReadsBackAndReportsAnInjectedFullDisk) {
  ebb::testing::TempDir dir("platform");
  const fs::path p = dir.path() / "f";
  int err = -1;
  platform::File f = platform::File::Open(p, platform::OpenMode::kWriteTruncate, &err);
  ASSERT_TRUE(f.is_open());
  EXPECT_EQ(err, 0);
  EXPECT_EQ(f.WriteAll("hello, world"), 0);
  platform::testing::FailNext(Op::kWrite, ENOSPC);
  EXPECT_EQ(f.WriteAll("more"), ENOSPC);
  platform::testing::FailNext(Op::kSync, EIO);
  EXPECT_EQ(f.Sync(), EIO);
  EXPECT_EQ(f.Sync(), 0);
  EXPECT_EQ(f.Close(), 0);
  EXPECT_FALSE(f.is_open());

  platform::FileInfo info;
  ASSERT_EQ(platform::StatPath(p, &info), 0);
  EXPECT_EQ(info.type, platform::FileType::kRegular);
  EXPECT_EQ(info.size, 12u);  // the failed write wrote nothing
  EXPECT_GT(info.mtime_ns, 0);
  platform::File r = platform::File::Open(p, platform::OpenMode::kRead, &err);
  ASSERT_TRUE(r.is_open());
  char buf[16] = {};
  const platform::IoResult got = r.ReadAt(buf, sizeof(buf), 7);
  EXPECT_EQ(got.err, 0);
  EXPECT_EQ(std::string(buf, got.bytes), "world");

  platform::testing::FailNext(Op::kSync, EIO);
  EXPECT_EQ(platform::SyncFile(p), EIO);
  EXPECT_EQ(platform::SyncFile(p), 0);
  EXPECT_EQ(platform::SyncDirectory(dir.path()), 0);
  EXPECT_EQ(platform::StatPath(dir.path() / "missing", &info), ENOENT);
  platform::File missing =
      platform::File::Open(dir.path() / "missing", platform::OpenMode::kRead, &err);
  EXPECT_FALSE(missing.is_open());
  EXPECT_EQ(err, ENOENT);
}

TEST_F(PlatformTest, ASecondFileLockOnTheSameFileIsBusyUntilTheFirstGoes) {
  ebb::testing::TempDir dir("platform");
  const fs::path p = dir.path() / ".lock";
  {
    platform::FileLock first(p, platform::FileLock::Wait::kNo);
    ASSERT_TRUE(first.held());
    EXPECT_EQ(first.err(), 0);
    platform::FileLock second(p, platform::FileLock::Wait::kNo);
    EXPECT_FALSE(second.held());
    EXPECT_TRUE(second.busy());
    EXPECT_EQ(second.err(), EWOULDBLOCK);
  }
  platform::FileLock again(p, platform::FileLock::Wait::kYes);
  EXPECT_TRUE(again.held());
  EXPECT_FALSE(again.busy());
  // A lock file that cannot be created: not held, not busy.
  platform::FileLock nowhere(dir.path() / "no" / "such" / ".lock", platform::FileLock::Wait::kNo);
  EXPECT_FALSE(nowhere.held());
  EXPECT_FALSE(nowhere.busy());
  EXPECT_EQ(nowhere.err(), ENOENT);
}

// The identity mapped_file_guard relies on: a mapping's device and inode are the file's.
TEST_F(PlatformTest, ReadMappingsFindsAFileMappingByDeviceAndInode) {
  ebb::testing::TempDir dir("platform");
  const fs::path p = dir.path() / "mapped";
  WriteFile(p, std::string(3 * platform::PageSize(), 'x'));
  platform::FileInfo info;
  ASSERT_EQ(platform::StatPath(p, &info), 0);
  int err = 0;
  platform::File f = platform::File::Open(p, platform::OpenMode::kRead, &err);
  ASSERT_TRUE(f.is_open());
  const platform::MapResult m = platform::MapFileReadOnly(f, info.size);
  ASSERT_NE(m.addr, nullptr);
  f.Close();  // the mapping stays valid
  EXPECT_EQ(static_cast<const char*>(m.addr)[info.size - 1], 'x');
  const auto start = reinterpret_cast<uintptr_t>(m.addr);
  for (const bool with_resident : {false, true}) {
    int found = 0;
    for (const platform::MemoryMapping& mm : platform::ReadMappings(with_resident)) {
      if (mm.start != start) continue;
      ++found;
      EXPECT_EQ(mm.end, start + info.size);
      EXPECT_EQ(mm.device, info.device);
      EXPECT_EQ(mm.inode, info.inode);
      EXPECT_EQ(mm.access, platform::kAccessRead);
      EXPECT_FALSE(mm.shared);
      EXPECT_EQ(fs::path(mm.path).filename(), "mapped");
      if (with_resident) {
        EXPECT_GE(mm.resident_bytes, platform::PageSize());  // the page read
      }
    }
    EXPECT_EQ(found, 1) << "with_resident=" << with_resident;
  }
  EXPECT_EQ(platform::Unmap(m.addr, info.size), 0);
}

TEST_F(PlatformTest, ResidentPagesCountsTouchedPagesAndDontNeedDropsThem) {
  const uint64_t page = platform::PageSize();
  const platform::MapResult m = platform::MapAnonymous(4 * page, /*reserve=*/false);
  ASSERT_NE(m.addr, nullptr);
  EXPECT_EQ(platform::ResidentPages(m.addr, 4 * page), 0u);
  char* p = static_cast<char*>(m.addr);
  p[0] = 1;
  p[2 * page] = 1;
  EXPECT_EQ(platform::ResidentPages(m.addr, 4 * page), 2u);
  EXPECT_EQ(platform::Advise(m.addr, 4 * page, platform::Advice::kDontNeed), 0);
  EXPECT_EQ(platform::ResidentPages(m.addr, 4 * page), 0u);
  EXPECT_EQ(p[0], 0);  // private anonymous memory reads back as zeros
  EXPECT_EQ(platform::Unmap(m.addr, 4 * page), 0);
}

// ---- A refused anonymous map ----------------------------------------------------------------

// KvPool::Allocate when the OS refuses the map: ResourceExhausted naming the size and the OS's
// reason, and nothing charged, admitted or counted (the admission hook's charge is released).
TEST_F(PlatformTest, KvPoolReportsARefusedMapAndLeaksNothing) {
  const uint64_t page = PageSize();
  KvPool pool(/*max_bytes=*/64 * page, /*retain_bytes=*/64 * page);
  uint64_t admitted = 0, released = 0;
  pool.set_admit_fn([&](uint64_t bytes, bool) { admitted += bytes; },
                    [&](uint64_t bytes) { released += bytes; });
  platform::testing::FailNext(Op::kMapAnonymous, ENOMEM);
  try {
    pool.Allocate(3 * page, "KV cache");
    FAIL() << "expected the refused map to throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_EQ(std::string(e.what()), "KV cache: the OS refused " + FormatBytes(3 * page) + " (" +
                                         std::strerror(ENOMEM) +
                                         "); lower max_length or the batch size");
  }
  KvStats s = pool.Stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.retained_bytes, 0u);
  EXPECT_EQ(s.num_allocations, 0u);
  EXPECT_EQ(s.num_os_maps, 0u);
  EXPECT_EQ(admitted, 3 * page);
  EXPECT_EQ(released, admitted);

  // The failure is not sticky: the next allocation maps, and goes back to the pool.
  {
    KvBlock b = pool.Allocate(3 * page, "KV cache");
    ASSERT_NE(b.data(), nullptr);
    std::memset(b.data(), 1, 3 * page);
    s = pool.Stats();
    EXPECT_EQ(s.in_use_bytes, 3 * page);
    EXPECT_EQ(s.num_os_maps, 1u);
  }
  s = pool.Stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(released, admitted);
  EXPECT_EQ(pool.Trim(), 3 * page);
}

// BatchKvRegion::Relayout when the OS refuses the new region: ResourceExhausted, and the old
// region (and the tokens in it) is kept as it was.
TEST_F(PlatformTest, BatchKvRegionKeepsItsRowsWhenANewRegionIsRefused) {
  KvShape shape;
  shape.num_layers = 1;
  shape.kv_heads = 1;
  shape.head_size = 4;
  shape.elem_bytes = 4;
  BatchKvRegion r(shape, 2);
  const int align = r.align_tokens();
  r.Relayout(align, {});
  const KvSlotView before = r.SlotView(1);
  before.base[0] = 42;
  platform::testing::FailNext(Op::kMapAnonymous, ENOMEM);
  try {
    r.Relayout(2 * align, {{1, 1}});
    FAIL() << "expected the refused map to throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("batched decode: the OS refused to map "),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(r.stride(), align);
  EXPECT_EQ(r.SlotView(1).base, before.base);
  EXPECT_EQ(r.SlotView(1).base[0], 42);
  r.Relayout(2 * align, {{1, 1}});  // runs normally after
  EXPECT_EQ(r.stride(), 2 * align);
  EXPECT_EQ(r.SlotView(1).base[0], 42);
}

// ---- A full disk ------------------------------------------------------------------------------

// A ModelProto of one graph: `graph` is the GraphProto's payload.
std::string Model(const std::string& graph) {
  std::string model;
  proto::PutLen(model, proto::onnx::kModelGraph, graph);
  return model;
}

// A graph with one initializer whose 16 bytes are in `data_name` at offset 0.
std::string GraphWithExternalInitializer(const std::string& data_name) {
  using namespace proto::onnx;
  std::string tensor;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"location", data_name}, {"offset", "0"}, {"length", "16"}}) {
    std::string entry;
    proto::PutLen(entry, kEntryKey, k);
    proto::PutLen(entry, kEntryValue, v);
    proto::PutLen(tensor, kTensorExternalData, entry);
  }
  std::string graph;
  proto::PutLen(graph, kGraphInitializer, tensor);
  return graph;
}

// The model cache's entry writer (AlignExternalData): ENOSPC while copying the data file, and
// while writing the graph file, each a clear Internal error naming the file and the disk's state
// (the cache then logs it, removes the entry's temp folder and loads uncached).
TEST_F(PlatformTest, AligningACacheEntryOnAFullDiskIsAClearError) {
  ebb::testing::TempDir dir("platform");
  fs::create_directories(dir.path() / "in");
  fs::create_directories(dir.path() / "out");
  const fs::path graph_in = dir.path() / "in" / "model.onnx";
  const fs::path graph_out = dir.path() / "out" / "model.onnx";
  WriteFile(graph_in, Model(GraphWithExternalInitializer("model.onnx.data")));
  WriteFile(dir.path() / "in" / "model.onnx.data", std::string(16, 'w'));
  const std::string head = "cannot align the external data of " + graph_in.string() + ": ";

  platform::testing::FailNext(Op::kWrite, ENOSPC);  // the data file's first region
  try {
    AlignExternalData(graph_in, graph_out, "model.onnx.data", 64);
    FAIL() << "expected ENOSPC to throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_EQ(std::string(e.what()), head + "write failed: " + DescribeErrno(ENOSPC));
  }

  // Without data to copy, the first write is the graph file's.
  WriteFile(graph_in, Model(""));
  platform::testing::FailNext(Op::kWrite, ENOSPC);
  try {
    AlignExternalData(graph_in, graph_out, "model.onnx.data", 64);
    FAIL() << "expected ENOSPC to throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_EQ(std::string(e.what()),
              head + "cannot write " + graph_out.string() + ": " + DescribeErrno(ENOSPC));
  }

  // With room, the same files align.
  WriteFile(graph_in, Model(GraphWithExternalInitializer("model.onnx.data")));
  const AlignedExternalData a = AlignExternalData(graph_in, graph_out, "model.onnx.data", 64);
  EXPECT_EQ(a.num_tensors, 1u);
  EXPECT_EQ(a.data_bytes, 16u);
  EXPECT_EQ(fs::file_size(dir.path() / "out" / "model.onnx.data"), 16u);
  EXPECT_EQ(CountMisalignedRegions(graph_out, 64), 0u);
}

// The last-logits rewrite on a full disk (its memory file's pages are the page cache's): no
// rewrite, and why, so the caller loads the model as it is.
TEST_F(PlatformTest, LastLogitsRewriteFallsBackWhenItsMemoryFileCannotBeWritten) {
  using namespace proto::onnx;
  ebb::testing::TempDir dir("platform");
  std::string node;
  proto::PutLen(node, kNodeInput, "hidden");
  proto::PutLen(node, kNodeInput, "lm_head.weight");
  proto::PutLen(node, kNodeOutput, "logits");
  proto::PutLen(node, kNodeOpType, "MatMul");
  std::string graph;
  proto::PutLen(graph, kGraphNode, node);
  const fs::path onnx = dir.path() / "model.onnx";
  WriteFile(onnx, Model(graph));

  std::string why;
  platform::testing::FailNext(Op::kWrite, ENOSPC);
  EXPECT_FALSE(RewriteForLastLogits(onnx, "logits", 8, &why).has_value());
  EXPECT_EQ(why, std::string("writing the rewritten model failed: ") + std::strerror(ENOSPC));

  why.clear();
  const std::optional<RewrittenModel> rewritten = RewriteForLastLogits(onnx, "logits", 8, &why);
  ASSERT_TRUE(rewritten.has_value()) << why;
  platform::FileInfo info;
  ASSERT_EQ(platform::StatPath(rewritten->path(), &info), 0) << rewritten->path();
  EXPECT_GT(info.size, fs::file_size(onnx));  // the inserted nodes and input
}

}  // namespace
}  // namespace ebb::internal
