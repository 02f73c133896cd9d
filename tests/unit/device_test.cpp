// Issue 35, the parts that need no GPU: WebGPU's option checks, the device a provider plan puts
// the KV on (WebGPU and CUDA through one abstraction), the node-placement line, and a KvPool on
// a device (a fake device over host memory: handles, the device budget, retain and trim).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "ebb/error.h"
#include "kv/kv_pool.h"
#include "model/ep_placement.h"
#include "ort/device_target.h"
#include "ort/provider_plan.h"
#include "ort/webgpu_options.h"

namespace ebb::internal {
namespace {

using ::testing::HasSubstr;

TEST(WebGpuOptions, TypedKeysAreCheckedAndSpelledAsOrtWantsThem) {
  const WebGpuOptions w = ParseWebGpuOptions({{"storageBufferCacheMode", "BUCKET"},
                                              {"ep.webgpuexecutionprovider.validationMode", "full"},
                                              {"enableGraphCapture", "true"},
                                              {"gpu_mem_limit", "1GiB"}},
                                             "provider_options.webgpu");
  EXPECT_EQ(w.ort.at("storageBufferCacheMode"), "bucket");
  EXPECT_EQ(w.ort.at("validationMode"), "full");  // the prefixed spelling is accepted
  EXPECT_EQ(w.ort.at("enableGraphCapture"), "1");
  EXPECT_EQ(w.ort.count("gpu_mem_limit"), 0u) << "ebb's own key never reaches ORT";
  EXPECT_EQ(w.gpu_mem_limit_bytes, 1ull << 30);
  // Context-level keys (fixed by the first session on the device) are split out.
  EXPECT_EQ(w.context.count("storageBufferCacheMode"), 1u);
  EXPECT_EQ(w.context.count("enableGraphCapture"), 0u);
}

TEST(WebGpuOptions, EbbsDefaultCacheModeIsLazyReleaseUnlessSet) {
  EXPECT_EQ(ParseWebGpuOptions({}, "x").ort.at("storageBufferCacheMode"), "lazyRelease");
  EXPECT_EQ(ParseWebGpuOptions({{"storageBufferCacheMode", "simple"}}, "x")
                .ort.at("storageBufferCacheMode"),
            "simple");
}

TEST(WebGpuOptions, ABadValueNamesTheKeyAndTheChoices) {
  try {
    ParseWebGpuOptions({{"storageBufferCacheMode", "graph"}}, "provider_options.webgpu");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("provider_options.webgpu.storageBufferCacheMode='graph'"));
    EXPECT_THAT(e.what(), HasSubstr("disabled lazyRelease simple bucket"));
  }
  EXPECT_THROW(ParseWebGpuOptions({{"maxStorageBufferBindingSize", "1000"}}, "x"), Error);
  EXPECT_THROW(ParseWebGpuOptions({{"maxNumPendingDispatches", "0"}}, "x"), Error);
  EXPECT_THROW(ParseWebGpuOptions({{"deviceId", "-1"}}, "x"), Error);
  EXPECT_THROW(ParseWebGpuOptions({{"gpu_mem_limit", "lots"}}, "x"), Error);
}

TEST(WebGpuOptions, AnUnknownKeyPassesThroughToOrtWithOneWarningNamingTheClosestKey) {
  const WebGpuOptions w = ParseWebGpuOptions({{"someNewOrtKey", "1"}}, "x");
  EXPECT_EQ(w.ort.at("someNewOrtKey"), "1");
  ASSERT_EQ(w.unknown.size(), 1u);
  EXPECT_THAT(w.unknown[0], HasSubstr("passed to ONNX Runtime as "
                                      "ep.webgpuexecutionprovider.someNewOrtKey"));
  const WebGpuOptions typo = ParseWebGpuOptions({{"storageBufferCacheMod", "bucket"}}, "x");
  ASSERT_EQ(typo.unknown.size(), 1u);
  EXPECT_THAT(typo.unknown[0], HasSubstr("did you mean 'storageBufferCacheMode'"));
  EXPECT_TRUE(ParseWebGpuOptions({{"validationMode", "full"}}, "x").unknown.empty());
}

TEST(WebGpuOptions, TheDeviceOptionsOfTheFirstModelBindTheOthers) {
  const WebGpuOptions a = ParseWebGpuOptions({{"deviceId", "7"}}, "x");
  const WebGpuOptions b =
      ParseWebGpuOptions({{"deviceId", "7"}, {"storageBufferCacheMode", "simple"}}, "x");
  const WebGpuOptions c = ParseWebGpuOptions({{"deviceId", "7"}, {"enableGraphCapture", "1"}}, "x");
  auto first = AcquireWebGpuContext(a, "first");
  try {
    AcquireWebGpuContext(b, "second");
    FAIL() << "another cache mode on a held device";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("model 'first' holds that device"));
    EXPECT_THAT(e.what(), HasSubstr("storageBufferCacheMode=simple"));
  }
  auto same = AcquireWebGpuContext(c, "third");  // a session-level key differs: fine
  first.reset();
  same.reset();
  auto now = AcquireWebGpuContext(b, "second");  // nobody holds it: a new record
  EXPECT_EQ(now->device_id(), 7);
}

TEST(DeviceTarget, WebGpuAndCudaGoThroughOneAbstraction) {
  ModelOptions cpu;
  EXPECT_FALSE(KvDeviceFor(ResolveProviders({}, cpu)).has_value());

  ModelOptions w;
  w.execution_provider = "webgpu";
  w.provider_options["webgpu"]["gpu_mem_limit"] = "512MiB";
  const auto wt = KvDeviceFor(ResolveProviders({}, w));
  ASSERT_TRUE(wt.has_value());
  EXPECT_EQ(wt->Name(), "webgpu:0");
  EXPECT_EQ(wt->memory_name, "WebGPU_Buf");
  EXPECT_EQ(wt->gpu_mem_limit_bytes, 512ull << 20);
  EXPECT_EQ(wt->limit_option, "provider_options.webgpu.gpu_mem_limit");

  ModelOptions c;
  c.execution_provider = "CUDAExecutionProvider";
  c.provider_options["cuda"]["device_id"] = "1";
  c.provider_options["cuda"]["gpu_mem_limit"] = "2147483648";
  const auto ct = KvDeviceFor(ResolveProviders({}, c));
  ASSERT_TRUE(ct.has_value());
  EXPECT_EQ(ct->Name(), "cuda:1");
  EXPECT_EQ(ct->memory_name, "Cuda");
  EXPECT_EQ(ct->gpu_mem_limit_bytes, 2147483648ull);

  ModelOptions o;
  o.execution_provider = "openvino";  // manages its own memory: no ebb device KV
  EXPECT_FALSE(KvDeviceFor(ResolveProviders({}, o)).has_value());
}

TEST(EpPlacement, NamesEveryOperatorThatFellBackToTheCpu) {
  const NodePlacement nodes{{"CPUExecutionProvider", "Shape"},
                            {"CPUExecutionProvider", "Gather"},
                            {"CPUExecutionProvider", "Shape"},
                            {"WebGpuExecutionProvider", "MatMulNBits"}};
  EXPECT_EQ(DescribeEpPlacement(nodes, "webgpu", "WebGpuExecutionProvider"),
            "webgpu: 1 nodes; CPU fallback: 3 nodes (Shape x2, Gather x1)");
  // ORT 1.30 lists only the CPU provider's nodes.
  EXPECT_EQ(
      DescribeEpPlacement({{"CPUExecutionProvider", "Cast"}}, "webgpu", "WebGpuExecutionProvider"),
      "CPU fallback: 1 node (Cast x1)");
  EXPECT_EQ(DescribeEpPlacement({{"WebGpuExecutionProvider", "Add"}}, "webgpu",
                                "WebGpuExecutionProvider"),
            "webgpu: 1 nodes, no CPU fallback");
  EXPECT_EQ(DescribeEpPlacement({}, "webgpu", "WebGpuExecutionProvider"), "");
}

// Device memory over host memory, so the pool's device path runs here: handles it gave out and
// took back are counted, so a leak or a double free fails the test.
class FakeDevice final : public KvDeviceMemory {
 public:
  explicit FakeDevice(std::set<void*>* live) : live_(live) {}
  void* Alloc(uint64_t bytes) override {
    void* p = std::malloc(bytes);
    live_->insert(p);
    return p;
  }
  void Free(void* handle) noexcept override {
    EXPECT_EQ(live_->erase(handle), 1u) << "a handle freed twice or never given";
    std::free(handle);
  }
  const Ort::MemoryInfo& memory_info() const override { return info_; }
  std::string name() const override { return "fake:0"; }

 private:
  std::set<void*>* live_;
  Ort::MemoryInfo info_{nullptr};
};

TEST(KvPoolOnADevice, BudgetCountsWeightsKvAndRetainedAndFreesRetainedBeforeRefusing) {
  std::set<void*> live;
  {
    KvPool pool(0, /*retain=*/4096, std::make_unique<FakeDevice>(&live));
    pool.set_device_budget(/*limit=*/10000, /*fixed=*/4000, "provider_options.fake.gpu_mem_limit");
    KvBlock a = pool.Allocate(3000);  // rounded to 256: 3072
    EXPECT_EQ(a.bytes(), 3072u);
    EXPECT_EQ(live.size(), 1u);
    try {
      pool.Allocate(3000);  // 4000 + 3072 + 3072 > 10000
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("provider_options.fake.gpu_mem_limit=10000"));
      EXPECT_THAT(e.what(), HasSubstr("fake:0"));
    }
    EXPECT_EQ(pool.Stats().num_refusals, 1u);
    a.Reset();  // retained (3072 <= 4096): the device buffer stays
    EXPECT_EQ(pool.Stats().retained_bytes, 3072u);
    EXPECT_EQ(live.size(), 1u);
    KvBlock b = pool.Allocate(3000);  // the same size: reused, no new handle
    EXPECT_EQ(pool.Stats().num_os_maps, 1u);
    b.Reset();
    // A request that only fits once the retained buffer is gone: it is freed, then admitted.
    KvBlock c = pool.Allocate(5000);
    EXPECT_EQ(pool.Stats().retained_bytes, 0u);
    EXPECT_EQ(live.size(), 1u);
    c.Reset();  // over kv_cache.retain_bytes: freed at once
    EXPECT_TRUE(live.empty());
    EXPECT_EQ(pool.Trim(), 0u);
    KvBlock r = pool.Allocate(1000);
    r.Reset();
    EXPECT_EQ(live.size(), 1u);
    EXPECT_EQ(pool.Trim(), 1024u);  // the retained buffer goes back to the device
    EXPECT_TRUE(live.empty());
    KvBlock d = pool.Allocate(100);
    pool.set_keep_nothing(true);
    d.Reset();
    EXPECT_TRUE(live.empty()) << "keep-nothing frees at once";
    KvBlock e = pool.Allocate(100);
  }
  EXPECT_TRUE(live.empty()) << "the pool's destructor frees what it retained";
}

}  // namespace
}  // namespace ebb::internal
