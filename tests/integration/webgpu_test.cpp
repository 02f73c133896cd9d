// Issue 35: models on ORT's WebGPU provider with the KV on the device. Runs on any machine:
// ctest runs this binary under scripts/vulkan_env (Mesa's lavapipe, fetched by
// scripts/bootstrap), or on a real GPU's Vulkan driver when run by hand. One process for the
// whole suite (not one per test): a "keeper" model holds the WebGPU device for the suite, so
// that ORT's device and its compiled pipelines are made once (lavapipe compiles a pipeline in
// LLVM; Mesa's shader cache, MESA_SHADER_CACHE_DIR, keeps them across runs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/log.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;

std::filesystem::path Models() { return testing::TestModelsDir(); }
std::filesystem::path Int4() { return Models() / "llama-tiny-int4"; }  // GQA, shared KV
std::filesystem::path Gpt2() { return Models() / "gpt2-tiny-fp32"; }   // combined, ping-pong
std::filesystem::path Stories() { return testing::SharedDir() / "models" / "stories260k"; }

ModelOptions OnWebGpu() {
  ModelOptions o;
  o.Set("execution_provider", "webgpu");
  return o;
}

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = (i * 37 + 11) % vocab;
  return p;
}

std::vector<int32_t> Greedy(const std::shared_ptr<Model>& m, const std::vector<int32_t>& prompt,
                            int max_length) {
  GeneratorParams p;
  p.max_length = max_length;
  Generator g(m, p);
  g.AppendTokens(prompt);
  while (!g.done()) g.GenerateNextToken();
  return {g.sequence(0).begin(), g.sequence(0).end()};
}

// The first position where two token lists differ, for the failure message.
std::string FirstDifference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size() || a[i] != b[i]) {
      return "first difference at position " + std::to_string(i);
    }
  }
  return "equal";
}

// Holds the WebGPU device for the whole suite (see the top).
class WebGpuSuite : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!std::getenv("VK_DRIVER_FILES") && !std::getenv("EBB_WEBGPU_REAL_DRIVER")) {
      GTEST_SKIP() << "no Vulkan driver chosen: run under scripts/vulkan_env (ctest does), or set "
                      "EBB_WEBGPU_REAL_DRIVER=1 to use this machine's";
    }
    keeper = ebb::LoadModel(Int4(), OnWebGpu());
  }
  void TearDown() override { keeper.reset(); }
  static inline std::shared_ptr<Model> keeper;
};

class WebGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!WebGpuSuite::keeper) GTEST_SKIP() << "the WebGPU suite did not start (see above)";
  }
};

// --- Same tokens as the CPU -----------------------------------------------------------------

TEST_F(WebGpu, GreedyTokensEqualTheCpusOnEveryKvLayout) {
  for (const auto& dir : {Int4(), Gpt2()}) {
    SCOPED_TRACE(dir.string());
    auto cpu = ebb::LoadModel(dir);
    auto gpu = ebb::LoadModel(dir, OnWebGpu());
    const auto prompt = Prompt(6, cpu->info().vocab_size);
    const auto a = Greedy(cpu, prompt, 20);
    const auto b = Greedy(gpu, prompt, 20);
    EXPECT_EQ(a, b) << FirstDifference(a, b);
    EXPECT_EQ(gpu->runtime().Stats().device.device, "webgpu:0");
  }
}

TEST_F(WebGpu, Stories260kPrintsTheCpusText) {
  EBB_SKIP_UNLESS_EXISTS(Stories());
  auto cpu = ebb::LoadModel(Stories());
  auto gpu = ebb::LoadModel(Stories(), OnWebGpu());
  const auto prompt = cpu->tokenizer()->Encode("Once upon a time, a dog");
  const auto a = Greedy(cpu, prompt, 30);
  const auto b = Greedy(gpu, prompt, 30);
  EXPECT_EQ(a, b) << FirstDifference(a, b);
  EXPECT_EQ(cpu->tokenizer()->Decode(a), gpu->tokenizer()->Decode(b));
}

// --- The KV lives on the device and goes back with its generator ------------------------------

TEST_F(WebGpu, DeviceKvIsHeldByTheGeneratorAndFreedWhenItDies) {
  auto m = ebb::LoadModel(Int4(), OnWebGpu());
  const uint64_t per_token = m->info().kv_bytes_per_token;
  {
    GeneratorParams p;
    p.max_length = 64;
    Generator g(m, p);
    g.AppendTokens(Prompt(5, m->info().vocab_size));
    g.GenerateNextToken();
    const MemoryStats s = m->runtime().Stats();
    EXPECT_TRUE(s.device.available);
    EXPECT_EQ(s.kv.in_use_bytes, 0u) << "no KV in host memory";
    EXPECT_GE(s.device.kv.in_use_bytes, 64 * per_token);  // static: max_length up front
    EXPECT_EQ(s.device.used_bytes,
              s.device.weights_bytes + s.device.kv.in_use_bytes + s.device.kv.retained_bytes);
    EXPECT_EQ(s.device.cache_mode, "lazyRelease");
    EXPECT_EQ(s.device.ort_cache_bytes, 0);
  }
  const MemoryStats after = m->runtime().Stats();
  EXPECT_EQ(after.device.kv.in_use_bytes, 0u);
  EXPECT_EQ(after.device.kv.retained_bytes, 0u);  // kv_cache.retain_bytes=0: all handed back
  EXPECT_GE(after.device.kv.peak_in_use_bytes, 64 * per_token);
}

TEST_F(WebGpu, SeedLoopHandsEveryGeneratorsKvBack) {
  auto m = ebb::LoadModel(Int4(), OnWebGpu());
  GeneratorParams p;
  p.max_length = 24;
  for (int i = 0; i < 20; ++i) {
    {
      Generator g(m, p);
      g.AppendTokens(Prompt(4, m->info().vocab_size));
      while (!g.done()) g.GenerateNextToken();
      EXPECT_GT(m->runtime().Stats().device.kv.in_use_bytes, 0u);
    }
    ASSERT_EQ(m->runtime().Stats().device.kv.in_use_bytes, 0u) << "iteration " << i;
  }
  EXPECT_EQ(m->runtime().Stats().device.kv.num_allocations,
            20u * 2 * static_cast<uint64_t>(m->info().num_layers));
}

// --- Budget --------------------------------------------------------------------------------

TEST_F(WebGpu, GpuMemLimitRefusesALongRequestAndAShortOneStillRuns) {
  auto probe = ebb::LoadModel(Int4(), OnWebGpu());
  const uint64_t weights = probe->weights_bytes();
  const uint64_t per_token = probe->info().kv_bytes_per_token;
  probe.reset();
  ModelOptions o = OnWebGpu();
  o.Set("provider_options.webgpu.gpu_mem_limit", std::to_string(weights + 40 * per_token));
  auto m = ebb::LoadModel(Int4(), o);
  EXPECT_EQ(m->runtime().Stats().device.limit_bytes, weights + 40 * per_token);
  GeneratorParams longer;
  longer.max_length = 200;
  try {
    Generator g(m, longer);
    FAIL() << "a 200-token KV fitted a 40-token budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("provider_options.webgpu.gpu_mem_limit"));
    EXPECT_THAT(e.what(), HasSubstr("webgpu:0"));
  }
  EXPECT_EQ(m->runtime().Stats().device.kv.in_use_bytes, 0u) << "the refusal holds nothing";
  EXPECT_EQ(m->runtime().Stats().device.kv.num_refusals, 1u);
  const auto tokens = Greedy(m, Prompt(4, m->info().vocab_size), 16);
  EXPECT_EQ(tokens.size(), 16u);
}

TEST_F(WebGpu, WeightsOverGpuMemLimitRefuseTheLoad) {
  ModelOptions o = OnWebGpu();
  o.Set("provider_options.webgpu.gpu_mem_limit", "4096");
  try {
    ebb::LoadModel(Int4(), o);
    FAIL() << "loaded with a 4 KiB device budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr("provider_options.webgpu.gpu_mem_limit"));
  }
}

// --- Shrink --------------------------------------------------------------------------------

TEST_F(WebGpu, ShrinkHandsTheRetainedDeviceBuffersBack) {
  ModelOptions o = OnWebGpu();
  o.Set("kv_cache.retain_bytes", "64MiB");
  auto m = ebb::LoadModel(Int4(), o);
  Greedy(m, Prompt(4, m->info().vocab_size), 16);
  const MemoryStats before = m->runtime().Stats();
  EXPECT_GT(before.device.kv.retained_bytes, 0u);
  // Reused, not allocated again: the same sizes come back from ebb's own cache.
  const uint64_t allocs = before.device.kv.num_os_maps;
  Greedy(m, Prompt(4, m->info().vocab_size), 16);
  EXPECT_EQ(m->runtime().Stats().device.kv.num_os_maps, allocs);
  m->runtime().ShrinkArena();
  const MemoryStats after = m->runtime().Stats();
  EXPECT_EQ(after.device.kv.retained_bytes, 0u);
  EXPECT_LT(after.device.used_bytes, before.device.used_bytes);
  EXPECT_GT(after.num_shrinks, before.num_shrinks);
}

TEST_F(WebGpu, TheWebGpuShrinkKeyTrimsAfterEveryRunAndGpuIsItsAlias) {
  for (const char* dev : {"webgpu:0", "gpu:0", "cpu:0;webgpu:0"}) {
    SCOPED_TRACE(dev);
    ModelOptions o = OnWebGpu();
    o.Set("kv_cache.retain_bytes", "64MiB");
    auto m = ebb::LoadModel(Int4(), o);
    m->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", dev);
    Greedy(m, Prompt(4, m->info().vocab_size), 16);  // ORT would refuse "webgpu" in a Run()
    EXPECT_EQ(m->runtime().Stats().device.kv.retained_bytes, 0u);
  }
  auto m = ebb::LoadModel(Int4(), OnWebGpu());
  try {
    m->runtime().SetRunOption("memory.enable_memory_arena_shrinkage", "webgpu:1");
    FAIL() << "webgpu:1 accepted for a model on webgpu:0";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("webgpu:0"));
  }
}

// --- What the device cannot do is refused at load, with the reason ----------------------------

TEST_F(WebGpu, WhatTheDeviceCannotDoIsRefusedAtLoad) {
  for (const auto& [key, value, needle] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"kv_cache.mode", "dynamic", "kv_cache.mode=static"},
           {"prefix_cache.max_bytes", "1MiB", "prefix_cache.max_bytes"},
           {"decode_batch.max_rows", "4", "decode_batch.max_rows"}}) {
    SCOPED_TRACE(key);
    ModelOptions o = OnWebGpu();
    o.Set(key, value);
    try {
      ebb::LoadModel(Int4(), o);
      FAIL() << key << "=" << value << " loaded on WebGPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr(needle));
      EXPECT_THAT(e.what(), HasSubstr("webgpu:0"));
    }
  }
  // Per request too.
  auto m = ebb::LoadModel(Int4(), OnWebGpu());
  GeneratorParams p;
  p.kv_mode = KvMode::kDynamic;
  EXPECT_THROW(Generator(m, p), Error);
}

TEST_F(WebGpu, AModelAskingForOtherDeviceOptionsIsRefusedNamingBoth) {
  ModelOptions o = OnWebGpu();
  o.Set("provider_options.webgpu.storageBufferCacheMode", "simple");
  try {
    ebb::LoadModel(Gpt2(), o);
    FAIL() << "a second cache mode on one device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("storageBufferCacheMode=simple"));
    EXPECT_THAT(e.what(), HasSubstr("storageBufferCacheMode=lazyRelease"));
  }
}

// --- Rewind and multi-chunk prefill on a device ping-pong cache -------------------------------

// fp32 models: on the int4 one, WebGPU's MatMulNBits differs from MLAS's by ~0.02 in the logits
// (its own dequantisation and accumulation order), and after this rewind the CPU's top two
// logits are 0.015 apart, so the 15th token flips (measured: 244 on the CPU, 901 on lavapipe).
TEST_F(WebGpu, RewindAndChunkedPrefillMatchTheCpu) {
  for (const auto& dir : {Models() / "llama-tiny-fp32", Gpt2()}) {
    SCOPED_TRACE(dir.string());
    std::vector<std::vector<int32_t>> out;
    for (bool gpu : {false, true}) {
      auto m = gpu ? ebb::LoadModel(dir, OnWebGpu()) : ebb::LoadModel(dir);
      GeneratorParams p;
      p.max_length = 40;
      p.prefill_chunk_size = 3;  // several steps after a non-empty past
      Generator g(m, p);
      g.AppendTokens(Prompt(5, m->info().vocab_size));
      for (int i = 0; i < 4; ++i) g.GenerateNextToken();
      g.RewindTo(6);
      g.AppendTokens(Prompt(7, m->info().vocab_size));
      for (int i = 0; i < 4; ++i) g.GenerateNextToken();
      out.emplace_back(g.sequence(0).begin(), g.sequence(0).end());
    }
    EXPECT_EQ(out[0], out[1]) << FirstDifference(out[0], out[1]);
  }
}

// --- Device figures on every surface, CPU fallback named ---------------------------------------

TEST_F(WebGpu, DeviceFiguresAndTheKernelLineOnEverySurface) {
  auto m = Runtime::Default().Load("webgpu-surfaces", Int4(), OnWebGpu());
  Greedy(m, Prompt(4, m->info().vocab_size), 12);
  // The kernel line: the device's ops, and the nodes ORT left on the CPU.
  EXPECT_THAT(m->info().kernels, HasSubstr("webgpu: "));
  EXPECT_THAT(m->info().kernels, HasSubstr("CPU fallback: "));
  const auto stats = nlohmann::json::parse(ToJson(m->runtime().Stats()));
  EXPECT_EQ(stats["device"]["device"], "webgpu:0");
  EXPECT_GT(stats["device"]["kv"]["peak_in_use_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(stats["kv"]["peak_in_use_bytes"].get<uint64_t>(), 0u);
  const auto list = nlohmann::json::parse(ToJson(Runtime::Default().List()));
  bool found = false;
  for (const auto& e : list) {
    if (e["id"] == "webgpu-surfaces") {
      found = true;
      EXPECT_TRUE(e["device"]["available"].get<bool>());
      EXPECT_GT(e["device"]["weights_bytes"].get<uint64_t>(), 0u);
    }
  }
  EXPECT_TRUE(found);
  const MemoryStats total = Runtime::Default().Stats();
  EXPECT_TRUE(total.device.available);
  EXPECT_GE(total.device.kv.peak_in_use_bytes, m->runtime().Stats().device.kv.peak_in_use_bytes);
  Runtime::Default().Unload("webgpu-surfaces");
  // The CLI (a child process, in this environment).
  const auto r = testing::RunCli("generate " + Int4().string() +
                                 " --ep webgpu --prompt hello --max-length 10 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["memory"]["kv"]["peak_in_use_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(j["memory"]["device"]["kv"]["peak_in_use_bytes"].get<uint64_t>(), 0u);
  const auto info = testing::RunCli("info " + Int4().string() + " --ep webgpu");
  ASSERT_EQ(info.status, 0) << info.out;
  EXPECT_THAT(info.out, HasSubstr("device:   webgpu:0"));
  EXPECT_THAT(info.out, HasSubstr("WebGPU uses the one marked *"));
  EXPECT_THAT(info.out, HasSubstr("CPU fallback"));
}

// ebb serve on WebGPU: /metrics and /v1/runtime carry the device figures of a served model.
TEST_F(WebGpu, ServeReportsTheDeviceInMetricsAndRuntime) {
  testing::TempDir dir("webgpu-serve");
  // A free port, the service in the background, one request, the two documents, then stop.
  {
    std::ofstream sh(dir / "serve.sh");
    sh << "port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); "
          "s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])')\n"
       << "'" << testing::CliPath() << "' serve --model tiny='" << Int4().string()
       << "' --ep webgpu --port $port > '" << (dir / "serve.log") << "' 2>&1 &\n"
       << "pid=$!\n"
       << "for i in $(seq 1 300); do curl -sf localhost:$port/health >/dev/null && break; "
          "sleep 0.2; done\n"
       << "curl -sf localhost:$port/v1/completions -H 'Content-Type: application/json' "
          "-d '{\"model\": \"tiny\", \"prompt\": \"hi\", \"max_tokens\": 4}' >/dev/null\n"
       << "echo METRICS; curl -sf localhost:$port/metrics\n"
       << "echo RUNTIME; curl -sf localhost:$port/v1/runtime; echo\n"
       << "kill $pid; wait $pid\n";
  }
  const std::string out = testing::RunShell("sh '" + (dir / "serve.sh") + "'").out;
  ASSERT_NE(out.find("METRICS"), std::string::npos) << out;
  EXPECT_THAT(out, HasSubstr("ebb_device_memory_bytes{model=\"tiny\",device=\"webgpu:0\","
                             "kind=\"kv_peak\"}"));
  const auto at = out.find("RUNTIME");
  ASSERT_NE(at, std::string::npos) << out;
  std::string doc = out.substr(out.find('{', at));
  doc = doc.substr(0, doc.find('\n'));
  EXPECT_THAT(doc, HasSubstr("\"device\":\"webgpu:0\"")) << doc;
}

// --- Embeddings on the device ---------------------------------------------------------------

TEST_F(WebGpu, EmbeddingsEqualTheCpusWithinFloatTolerance) {
  const auto dir = Models() / "bert-tiny-fp32";
  auto cpu = ebb::LoadModel(dir);
  auto gpu = ebb::LoadModel(dir, OnWebGpu());
  EmbedRequest req;
  req.input_ids = {{2, 50, 60, 70, 3}, {2, 100, 3}};
  const auto a = Embed(cpu, req);
  const auto b = Embed(gpu, req);
  ASSERT_EQ(a.embeddings.size(), b.embeddings.size());
  for (size_t i = 0; i < a.embeddings.size(); ++i) {
    ASSERT_EQ(a.embeddings[i].size(), b.embeddings[i].size());
    for (size_t k = 0; k < a.embeddings[i].size(); ++k) {
      EXPECT_NEAR(a.embeddings[i][k], b.embeddings[i][k], 1e-3) << "row " << i << " dim " << k;
    }
  }
  EXPECT_TRUE(gpu->runtime().Stats().device.available);
}

// --- An unusable device: a clear error that says how to get a Vulkan driver ---------------------

TEST_F(WebGpu, NoVulkanDriverIsAClearErrorNamingTheFix) {
  const auto r = testing::RunShell(
      "env VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json " +
      testing::CliPath() + " generate " + Int4().string() +
      " --ep webgpu --prompt hello --max-length 4");
  const std::string& out = r.out;
  EXPECT_EQ(r.status, 1) << out;
  EXPECT_THAT(out, HasSubstr("No supported adapters"));
  EXPECT_THAT(out, HasSubstr("install your GPU's Vulkan driver"));
  EXPECT_THAT(out, HasSubstr("scripts/vulkan_env"));
  EXPECT_THAT(out, HasSubstr("--ep cpu"));
}

}  // namespace
}  // namespace ebb

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ebb::WebGpuSuite);
  return RUN_ALL_TESTS();
}
