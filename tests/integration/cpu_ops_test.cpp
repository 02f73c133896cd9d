// libebb_cpu_ops.so (src/cpu_ops/, docs/cpu_ops.md): ebb's own CPU kernels for com.microsoft
// GroupQueryAttention and MatMulNBits, as the custom ops ebb.cpu.*, in folders rewritten by
// tools/cpu_ops_model.py.
//  - op by op, against ORT's own GroupQueryAttention on seeded inputs (cpu_ops/gqa_check.cpp):
//    first prompt, padded prompt, prompt chunk, ragged decode, decode at the end of the buffer,
//    in place and not, for every attribute variant the op takes;
//  - whole folders through ebb: the rewritten folder keeps the shared past/present buffer and the
//    batched decode (ebb recognises ebb.cpu.GroupQueryAttention as a GQA graph), its logits
//    match the original's under teacher forcing, the kernels line names the ops, and an fp16
//    KV (--kv-fp16) holds half the bytes per token.
// The attention kernels need AVX2 + FMA + F16C, the matmul's AVX2 + FMA (each runs its AVX-512
// set where the CPU has it, VNNI for the matmul; EBB_CPU_OPS_ISA=avx2 takes the AVX2 sets anyway,
// and the op-by-op tests run both): on a CPU without them a test skips, saying so.
#include <cpuid.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache_build_wait.h"
#include "cpu_ops/int4_rows_op.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "generate/decode_batcher.h"
#include "integration/cpu_ops/check_util.h"
#include "log_capture.h"
#include "model/cpu_ops_rewrite.h"
#include "model/model_views.h"
#include "platform/testing.h"
#include "test_env.h"

#ifndef EBB_TEST_CPU_OPS_LIB
#error "EBB_TEST_CPU_OPS_LIB (the path of libebb_cpu_ops.so) must be defined"
#endif
#ifndef EBB_TEST_GQA_CHECK
#error "EBB_TEST_GQA_CHECK (the path of gqa_check) must be defined"
#endif
#ifndef EBB_TEST_MATMUL_CHECK
#error "EBB_TEST_MATMUL_CHECK (the path of matmul_check) must be defined"
#endif

namespace ebb {
namespace {

namespace fs = std::filesystem;
using testing::CacheEntries;
using ::testing::HasSubstr;
using testing::LogCapture;
using testing::TempDir;

// What each op's kernels need (gqa_kernels.cpp, int4_rows_op.cpp).
bool HasAvx2() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // F16C: CPUID leaf 1 (clang's builtin lacks it)
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}
bool HasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}
bool HasVnni() { return HasAvx512() && __builtin_cpu_supports("avx512vnni"); }
// The int4 matmul's AVX2 set (its AVX-512 set needs VNNI too).
bool HasMatMulKernel() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

#define SKIP_WITHOUT(cond, what)                                                       \
  if (!(cond)) {                                                                       \
    GTEST_SKIP() << "this CPU lacks " what ", which libebb_cpu_ops.so's kernels need"; \
  }

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int RunShell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// `src` rewritten by tools/cpu_ops_model.py into d/name (`args`: --ops, --kv-fp16).
fs::path Rewrite(const TempDir& d, const fs::path& src, const std::string& name,
                 const std::string& args) {
  const fs::path out = d.path() / name;
  const std::string cmd = "timeout 120 /usr/bin/python3 " + std::string(EBB_SOURCE_DIR) +
                          "/tools/cpu_ops_model.py --model-dir " + src.string() + " --out " +
                          out.string() + " --library " + EBB_TEST_CPU_OPS_LIB + " " + args + " > " +
                          (d.path() / (name + ".log")).string() + " 2>&1";
  EXPECT_EQ(RunShell(cmd), 0) << cmd;
  return out;
}

// Options for a load without the model cache (every load repacks or prepacks anew) and with
// cpu_ops=`cpu_ops`.
ModelOptions Uncached(const std::string& cpu_ops) {
  ModelOptions o;
  o.Set("model_cache.dir", "off");
  o.Set("cpu_ops", cpu_ops);
  return o;
}

// The greedy tokens of `a` from a fixed prompt, and the largest difference between a's and b's
// last-position logits over the prompt and every step, both fed a's tokens (teacher forcing),
// relative to the largest |logit| of a.
struct Compared {
  std::vector<int32_t> tokens;
  double max_diff_rel = 0;
  int argmax_agree = 0, steps = 0;
};

Compared TeacherForced(const std::shared_ptr<Model>& a, const std::shared_ptr<Model>& b,
                       int new_tokens) {
  GeneratorParams p;
  p.max_length = 64;
  Generator ga(a, p), gb(b, p);
  const std::vector<int32_t> prompt = {5, 17, 42, 7, 99, 3, 250, 11, 64, 128, 9};
  ga.AppendTokens(prompt);
  gb.AppendTokens(prompt);
  Compared c;
  double max_abs = 0, max_diff = 0;
  for (int i = 0; i <= new_tokens; ++i) {
    ga.ComputeLogits();
    gb.ComputeLogits();
    const auto la = ga.GetLogits();
    const auto lb = gb.GetLogits();
    EXPECT_EQ(la.size(), lb.size());
    for (size_t k = 0; k < std::min(la.size(), lb.size()); ++k) {
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(la[k])));
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(la[k]) - lb[k]));
    }
    const auto ia = std::max_element(la.begin(), la.end()) - la.begin();
    const auto ib = std::max_element(lb.begin(), lb.end()) - lb.begin();
    c.argmax_agree += ia == ib ? 1 : 0;
    ++c.steps;
    if (i == new_tokens) break;
    const auto t = static_cast<int32_t>(ia);
    c.tokens.push_back(t);
    ga.AppendTokens(std::vector<int32_t>{t});
    gb.AppendTokens(std::vector<int32_t>{t});
  }
  c.max_diff_rel = max_diff / std::max(max_abs, 1e-30);
  std::printf(
      "teacher forcing: %d steps, argmax agrees on %d, max logit difference %.3e of the "
      "largest |logit|\n",
      c.steps, c.argmax_agree, c.max_diff_rel);
  return c;
}

// For each variant: `script` (tools/, its arguments the variant) writes a one-node model pair,
// then `checker` compares ebb.cpu's op with ORT's on it, once per environment prefix in `envs`
// ("" runs as is). The checker exits 0 only when every case is within its tolerance (and, for
// gqa_check, every bad input is refused naming the input).
void OpByOp(const char* script, const char* checker, const std::vector<std::string>& variants,
            const std::vector<std::string>& envs) {
  TempDir d;
  for (size_t i = 0; i < variants.size(); ++i) {
    const fs::path prefix = d.path() / ("case" + std::to_string(i));
    const std::string make = "timeout 120 /usr/bin/python3 " + std::string(EBB_SOURCE_DIR) + "/" +
                             script + " --out " + prefix.string() + " " + variants[i] +
                             " > /dev/null";
    ASSERT_EQ(RunShell(make), 0) << make;
    for (const std::string& env : envs) {
      const fs::path log = d.path() / ("case" + std::to_string(i) + ".log");
      const std::string check = env + "timeout 120 " + checker + " --model " + prefix.string() +
                                " --library " + EBB_TEST_CPU_OPS_LIB + " > " + log.string() +
                                " 2>&1";
      EXPECT_EQ(RunShell(check), 0) << env << "variant '" << variants[i] << "': " << ReadFile(log);
    }
  }
}

TEST(CpuOps, GroupQueryAttentionMatchesOrtsKernelOpByOp) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  // Each variant: tools/gqa_model.py's arguments. gqa_check runs 5 scenarios x 2 bindings and
  // exits 1 when any output or present row is off by more than 1e-5 of the largest value, or
  // when the op runs a bad input (a short seqlens_k, a key of the wrong width).
  const std::vector<std::string> variants = {
      "",
      "--packed",
      "--interleaved",
      "--local-window 5",
      "--softcap 2.5",
      "--smooth",
      "--heads 8 --kv-heads 8 --head-size 32",
      "--heads 32 --kv-heads 8 --head-size 64",
      "--heads 4 --kv-heads 1 --head-size 16 --packed --interleaved",
      "--heads 8 --kv-heads 2 --head-size 48",
      "--heads 8 --kv-heads 2 --head-size 96",
      "--heads 8 --kv-heads 2 --head-size 128",
  };
  // Every instruction set this CPU has: the best one (default), and AVX2 on an AVX-512 CPU.
  std::vector<std::string> isas = {""};
  if (HasAvx512()) isas.push_back("EBB_CPU_OPS_ISA=avx2 ");
  OpByOp("tools/gqa_model.py", EBB_TEST_GQA_CHECK, variants, isas);
}

TEST(CpuOps, ARewrittenAttentionKeepsTheSharedKvAndTheLogits) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-fp32";
  const fs::path m = Rewrite(d, src, "gqa", "--ops gqa");
  auto original = ebb::LoadModel(src, Uncached("off"));  // ORT's kernels (auto would move them)
  auto rewritten = ebb::LoadModel(m);
  const ModelInfo& info = rewritten->info();
  EXPECT_THAT(info.kernels, HasSubstr("ebb.cpu.GroupQueryAttention x2: custom op"));
  EXPECT_TRUE(info.uses_gqa) << "ebb.cpu.GroupQueryAttention keeps com.microsoft's contract";
  EXPECT_EQ(info.past_present_share_buffer, original->info().past_present_share_buffer);
  EXPECT_TRUE(info.past_present_share_buffer);
  // fp32 throughout: the op's ~1e-7 differences stay that small in the logits (2.6e-7 measured).
  const Compared c = TeacherForced(original, rewritten, 12);
  EXPECT_LT(c.max_diff_rel, 1e-5);
  EXPECT_EQ(c.argmax_agree, c.steps);
}

std::vector<int32_t> Greedy(Generator& g, const std::vector<int32_t>& prompt) {
  g.AppendTokens(prompt);
  while (!g.done()) g.GenerateNextToken();
  const auto s = g.sequence(0);
  return {s.begin(), s.end()};
}

TEST(CpuOps, BatchedDecodeRunsRaggedRowsThroughTheOpAndKeepsTheSoloTokens) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  // The batched-decode tests' model (at block 32 its batched rows keep their solo tokens).
  const fs::path m =
      Rewrite(d, testing::TestModelsDir() / "llama-tiny-int4-b32", "gqa", "--ops gqa");
  const std::vector<std::vector<int32_t>> prompts = {{5, 17, 42, 7, 99, 3, 250},
                                                     {11, 64, 128, 9, 300, 12, 77, 501, 23, 6}};
  constexpr int kMaxLength = 40;
  std::vector<std::vector<int32_t>> solo;
  {
    auto plain = ebb::LoadModel(m);
    for (const auto& p : prompts) {
      GeneratorParams gp;
      gp.max_length = kMaxLength;
      Generator g(plain, gp);
      solo.push_back(Greedy(g, p));
    }
  }
  ModelOptions mo;
  mo.Set("decode_batch.max_rows", "2");
  mo.Set("decode_batch.policy", "gather");
  mo.Set("decode_batch.max_wait_us", "300000");  // a step waits up to 0.3 s for the other member
  // Whether the steps find both members waiting depends on how the threads are scheduled: with
  // this op in a debug build, about half the attempts ran every step with one row (none with
  // ORT's kernel; see the stop-46 note). So up to 10 attempts, each on a fresh model, until one
  // ran 2-row steps; every attempt must keep the solo tokens.
  bool two_row_steps = false;
  for (int attempt = 0; attempt < 10 && !two_row_steps; ++attempt) {
    auto model = ebb::LoadModel(m, mo);
    std::vector<std::vector<int32_t>> got(prompts.size());
    // Staggered: the second request joins once the first has generated 4 tokens, and the first
    // holds there until the second has generated 2 (the first from the prompt's logits, then a
    // decode step). From then on both are decoding members and each step's gather waits for the
    // other.
    std::mutex mu;
    std::condition_variable cv;
    int produced = 0;     // tokens of the first request; guarded by mu
    bool joined = false;  // the second request has run a decode step; guarded by mu
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
      GeneratorParams gp;
      gp.max_length = kMaxLength;
      Generator g(model, gp);
      g.AppendTokens(prompts[0]);
      while (!g.done()) {
        g.GenerateNextToken();
        std::unique_lock<std::mutex> lock(mu);
        if (++produced == 4) {
          cv.notify_all();
          cv.wait(lock, [&] { return joined; });
        }
      }
      const auto seq = g.sequence(0);
      got[0].assign(seq.begin(), seq.end());
    });
    threads.emplace_back([&] {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return produced >= 4; });
      }
      GeneratorParams gp;
      gp.max_length = kMaxLength;
      Generator g(model, gp);
      g.AppendTokens(prompts[1]);
      for (int i = 0; i < 2 && !g.done(); ++i) g.GenerateNextToken();
      {
        std::lock_guard<std::mutex> lock(mu);
        joined = true;
      }
      cv.notify_all();
      while (!g.done()) g.GenerateNextToken();
      const auto seq = g.sequence(0);
      got[1].assign(seq.begin(), seq.end());
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(got, solo) << "attempt " << attempt;
    const auto* batcher = internal::RunView(*model).decode_batcher().get();
    ASSERT_NE(batcher, nullptr) << "no decode batcher: the graph was not taken for a GQA graph";
    two_row_steps = batcher->stepped_rows() > batcher->steps();
  }
  EXPECT_TRUE(two_row_steps)
      << "no attempt ran a batched step with both rows (ragged: prompts of 7 and 10 tokens)";
}

TEST(CpuOps, AnFp16KvHoldsHalfTheBytesPerToken) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-fp32";
  const fs::path fp32 = Rewrite(d, src, "gqa", "--ops gqa");
  const fs::path fp16 = Rewrite(d, src, "gqa16", "--ops gqa --kv-fp16");
  auto a = ebb::LoadModel(fp32);
  auto b = ebb::LoadModel(fp16);
  ASSERT_GT(a->info().kv_bytes_per_token, 0u);
  EXPECT_EQ(b->info().kv_bytes_per_token * 2, a->info().kv_bytes_per_token);
  // K and V rounded to fp16 (relative error <= 2^-11 per value): the logits move by far less
  // than their spread (1.9e-4 measured).
  const Compared c = TeacherForced(a, b, 12);
  EXPECT_LT(c.max_diff_rel, 2e-3);
  EXPECT_GE(c.argmax_agree, c.steps - 1);
  EXPECT_GT(c.max_diff_rel, 0.0) << "an fp16 cache that changed nothing was not used";
}

TEST(CpuOps, TheInt4MatMulMatchesMlasOpByOp) {
  SKIP_WITHOUT(HasMatMulKernel(), "AVX2 + FMA");
  // tools/matmul_nbits_model.py's arguments: block sizes 32 to 256, K not a multiple of the block
  // (padding codes), N not a multiple of the 32-column tile, zero points or the default 8.
  // matmul_check runs M = 1, 2, 3, 4, 5, 9 and exits 1 over 1e-4 of the largest |Y|, or when a
  // row of an M-row call is not the bits of the same row run alone.
  const std::vector<std::string> variants = {
      "--k 200 --n 70 --block-size 32",
      "--k 200 --n 70 --block-size 32 --zero-points",
      "--k 256 --n 64 --block-size 64 --zero-points",
      "--k 384 --n 100 --block-size 128",
      "--k 384 --n 100 --block-size 128 --zero-points",
      "--k 512 --n 33 --block-size 256 --zero-points",
  };
  // Every instruction set this CPU has: the best one (default), and AVX2 on a VNNI CPU.
  std::vector<std::string> isas = {""};
  if (HasVnni()) isas.push_back("EBB_CPU_OPS_ISA=avx2 ");
  OpByOp("tools/matmul_nbits_model.py", EBB_TEST_MATMUL_CHECK, variants, isas);
}

TEST(CpuOps, TheInt4MatMulMatchesMlasUnderTeacherForcing) {
  SKIP_WITHOUT(HasMatMulKernel(), "AVX2 + FMA");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4";
  const fs::path m = Rewrite(d, src, "mm", "--ops matmul");
  auto original = ebb::LoadModel(src, Uncached("off"));  // ORT's kernels (auto would move them)
  auto rewritten = ebb::LoadModel(m);
  EXPECT_THAT(rewritten->info().kernels, HasSubstr("ebb.cpu.MatMulNBits"));
  EXPECT_THAT(rewritten->info().kernels, ::testing::Not(HasSubstr("MLAS")));
  // Both quantize A to int8 per block (accuracy level 4), so a 1e-7 difference can flip one
  // code and move a logit by far more; 3.1e-7 measured on this model with MLAS AVX512VNNI.
  const Compared c = TeacherForced(original, rewritten, 12);
  EXPECT_LT(c.max_diff_rel, 2e-2);
  EXPECT_GE(c.argmax_agree, c.steps - 1);
}

// Runs make() with EBB_CPU_OPS_ISA=avx2 set (the kernels ebb creates meanwhile take their AVX2
// sets, cpu_ops/int4_rows_op.h), and unset again whatever make() does.
template <typename F>
auto WithAvx2Sets(F make) {
  EXPECT_EQ(setenv("EBB_CPU_OPS_ISA", "avx2", 1), 0);
  struct Unset {
    ~Unset() { unsetenv("EBB_CPU_OPS_ISA"); }
  } unset;
  return make();
}

// The int4 matmul's two sets, op by op on tools/matmul_nbits_model.py's one-node models (libebb's
// built-in ops): blocks of 32 to 256, zero points or not, K not a multiple of the block, and N
// whose last 16-column group is partial in either half (77 = 4 x 16 + 13, 45 = 2 x 16 + 13, 70 =
// 4 x 16 + 6). The AVX2 set's Y equals the AVX-512 VNNI set's bit for bit at M = 1-5 and 9 (the
// rows of prefill and batched decode), and the kernel counters show which set each session ran.
TEST(CpuOps, TheInt4MatMulsTwoSetsGiveTheSameBitsOpByOp) {
  SKIP_WITHOUT(HasVnni(), "AVX-512 VNNI");
  unsetenv("EBB_CPU_OPS_ISA");  // the first session takes the CPU's set (VNNI), not a forced AVX2
  using ebb_cpu_ops::Int4KernelsCreated;
  using ebb_cpu_ops::Int4Set;
  TempDir d;
  const std::vector<std::string> variants = {
      "--k 200 --n 77 --block-size 32",
      "--k 200 --n 70 --block-size 32 --zero-points",
      "--k 256 --n 64 --block-size 64 --zero-points",
      "--k 384 --n 100 --block-size 128",
      "--k 512 --n 45 --block-size 256 --zero-points",
  };
  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "cpu_ops_test");
  for (size_t i = 0; i < variants.size(); ++i) {
    const fs::path prefix = d.path() / ("case" + std::to_string(i));
    const std::string make = "timeout 120 /usr/bin/python3 " + std::string(EBB_SOURCE_DIR) +
                             "/tools/matmul_nbits_model.py --out " + prefix.string() + " " +
                             variants[i] + " > /dev/null";
    ASSERT_EQ(RunShell(make), 0) << make;
    const int64_t k = std::stoll(variants[i].substr(4));
    const std::string op_path = prefix.string() + "_op.onnx";
    Ort::SessionOptions so;
    so.SetIntraOpNumThreads(2);
    internal::RegisterBuiltinCpuOps(so);
    const uint64_t vnni_before = Int4KernelsCreated(Int4Set::kAvx512Vnni);
    const uint64_t avx2_before = Int4KernelsCreated(Int4Set::kAvx2);
    Ort::Session vnni(env, op_path.c_str(), so);
    Ort::Session avx2 = WithAvx2Sets([&] { return Ort::Session(env, op_path.c_str(), so); });
    EXPECT_EQ(Int4KernelsCreated(Int4Set::kAvx512Vnni) - vnni_before, 1u);
    EXPECT_EQ(Int4KernelsCreated(Int4Set::kAvx2) - avx2_before, 1u);
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int64_t m : {1, 2, 3, 4, 5, 9}) {
      std::vector<float> a(static_cast<size_t>(m * k));
      for (float& x : a) x = dist(rng);
      const std::vector<float> y512 = check_util::RunMatMul(vnni, a, m, k),
                               y2 = check_util::RunMatMul(avx2, a, m, k);
      ASSERT_EQ(y512.size(), y2.size());
      EXPECT_EQ(std::memcmp(y512.data(), y2.data(), y512.size() * sizeof(float)), 0)
          << "variant '" << variants[i] << "', M = " << m;
    }
  }
}

// The int4 matmul's AVX2 set computes what its AVX-512 VNNI set computes: the same integer dot
// products and float steps per column (int4_rows_op.cpp TileAvx2), so the logits are the same
// bits, prompt (many rows) and steps alike. On a VNNI CPU EBB_CPU_OPS_ISA=avx2 takes the AVX2 set
// (read when the kernels are created, and by the kernels line); an AVX2 CPU has only that set.
TEST(CpuOps, TheInt4MatMulsAvx2SetGivesItsAvx512SetsLogitsBitForBit) {
  SKIP_WITHOUT(HasVnni(), "AVX-512 VNNI");
  unsetenv("EBB_CPU_OPS_ISA");  // the first load takes the CPU's set (VNNI), not a forced AVX2
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  using ebb_cpu_ops::Int4KernelsCreated;
  using ebb_cpu_ops::Int4Set;
  const uint64_t vnni_before = Int4KernelsCreated(Int4Set::kAvx512Vnni);
  auto avx512 = ebb::LoadModel(src, Uncached("matmul"));
  EXPECT_EQ(Int4KernelsCreated(Int4Set::kAvx512Vnni) - vnni_before, 15u);
  const uint64_t avx2_before = Int4KernelsCreated(Int4Set::kAvx2);
  std::shared_ptr<Model> avx2 =
      WithAvx2Sets([&] { return ebb::LoadModel(src, Uncached("matmul")); });
  EXPECT_EQ(Int4KernelsCreated(Int4Set::kAvx2) - avx2_before, 15u) << "the AVX2 set did not run";
  EXPECT_THAT(avx512->info().kernels, HasSubstr("ebb.cpu.MatMulNBits x15 (AVX-512 VNNI)"));
  EXPECT_THAT(avx2->info().kernels, HasSubstr("ebb.cpu.MatMulNBits x15 (AVX2)"));
  const Compared same = TeacherForced(avx512, avx2, 12);
  EXPECT_EQ(same.max_diff_rel, 0.0);
  EXPECT_EQ(same.argmax_agree, same.steps);
  // ...and both are ebb's kernel, not MLAS's (whose arithmetic differs in the last bits).
  EXPECT_GT(TeacherForced(ebb::LoadModel(src, Uncached("off")), avx2, 4).max_diff_rel, 0.0);
}

// Without a model-cache entry to map them from, the int4 matmul's repacked weights are an
// anonymous copy beside ORT's initializers for the model's life: memory.limit charges them with
// the weight files, and refuses a load whose limit has room for the files but not for them.
TEST(CpuOps, RepackedWeightsInAnonymousMemoryAreChargedToMemoryLimit) {
  SKIP_WITHOUT(HasMatMulKernel(), "AVX2 + FMA");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  // The repack's size from docs/cpu_ops.md's layout: per node, N rounded up to 32 columns, and
  // for each column K / 2 bytes of codes and one float scale per 32 k (block 32): N K / 2 and
  // N K / 8 bytes, each section rounded up to whole pages in the kernel's mapping. The tiny
  // preset (synth_info.json): hidden 64, kv 2 x 16, intermediate 128, vocabulary 1024; 2 layers
  // of q, k, v, o, gate, up and down ({N, K}), and the LM head.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  auto pages = [&](uint64_t b) { return (b + page - 1) / page * page; };
  const std::vector<std::pair<uint64_t, uint64_t>> layer = {
      {64, 64}, {32, 64}, {32, 64}, {64, 64}, {128, 64}, {128, 64}, {64, 128}};
  uint64_t repack = pages(1024 * 64 / 2) + pages(1024 * 64 / 8);
  for (int l = 0; l < 2; ++l) {
    for (const auto& [n, k] : layer) repack += pages(n * k / 2) + pages(n * k / 8);
  }
  const ModelOptions off = Uncached("off"), on = Uncached("matmul");
  const uint64_t files = ebb::LoadModel(src, off)->weights_bytes();
  EXPECT_EQ(files, fs::file_size(src / "model.onnx"));
  EXPECT_EQ(ebb::LoadModel(src, on)->weights_bytes(), files + repack);

  // memory.limit with room for the files and all but one byte of the repack: refused.
  const uint64_t others = Runtime::Default().Stats().weights_bytes;
  ModelOptions tight = on;
  tight.Set("memory.limit", std::to_string(others + files + repack - 1));
  try {
    ebb::LoadModel(src, tight);
    ADD_FAILURE() << "a load over memory.limit by its repacked weights was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(files + repack) + " bytes) of weights"));
  }
  tight.Set("memory.limit", std::to_string(others + files + repack));
  {
    auto fits = ebb::LoadModel(src, tight);
    EXPECT_EQ(Runtime::Default().Stats().weights_bytes, others + files + repack);
  }
  Runtime::Default().SetMemoryLimit(0);

  // From a model-cache entry the kernels map their packs: nothing anonymous to charge. The
  // building load itself still runs from the model file (the entry is built beside it).
  ModelOptions cached = on;
  cached.Set("model_cache.dir", (d.path() / "cache").string());
  {
    auto building = ebb::LoadModel(src, cached);
    EXPECT_EQ(building->weights_bytes(), files + repack);
    ASSERT_EQ(testing::WaitForCacheBuild(*building).cache, "built");
  }
  auto from_entry = ebb::LoadModel(src, cached);
  ASSERT_EQ(from_entry->runtime().Stats().weights.cache, "loaded");
  EXPECT_THAT(from_entry->info().kernels, HasSubstr("ebb.cpu.MatMulNBits x"));
  EXPECT_EQ(from_entry->weights_bytes(), files);
  EXPECT_EQ(from_entry->runtime().Stats().weights.anon_bytes, 0u);
}

// Loads `dir` with `o` while the next `skip` calls of `op` of the platform seam run and the
// `count` after them fail with ENOMEM (platform/testing.h); disarmed when it returns or throws.
std::shared_ptr<Model> LoadWithFailures(const fs::path& dir, const ModelOptions& o,
                                        platform::testing::Op op, int skip, int count = 1) {
  const platform::testing::ClearFailuresOnExit disarm;
  platform::testing::FailAfter(op, skip, ENOMEM, count);
  return ebb::LoadModel(dir, o);
}

// A kernel that cannot be created (here: the system refuses the memory for the int4 matmul's
// repacked weights, after three kernels were created and counted) makes ORT refuse the rewritten
// graph and free the kernels it made; the load goes on with ORT's kernels, with the same logits as
// cpu_ops=off, and charges no repack.
TEST(CpuOps, AGraphWhoseKernelsCannotBeCreatedLoadsOnOrtsKernels) {
  SKIP_WITHOUT(HasMatMulKernel(), "AVX2 + FMA");
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  const ModelOptions off = Uncached("off"), on = Uncached("matmul");
  auto plain = ebb::LoadModel(src, off);
  // The anonymous mappings of the session's creation after the third fail (ORT's own
  // allocations are not mappings of the platform seam); cleared before anything else runs.
  const std::shared_ptr<Model> fell_back =
      LoadWithFailures(src, on, platform::testing::Op::kMapAnonymous, 3, 1000);
  EXPECT_THAT(fell_back->info().kernels, ::testing::Not(HasSubstr("ebb.cpu.MatMulNBits")));
  EXPECT_THAT(fell_back->info().kernels, HasSubstr("MatMulNBits x"));
  EXPECT_EQ(fell_back->weights_bytes(), plain->weights_bytes())
      << "the refused session's kernels left their repack counted";
  const Compared c = TeacherForced(plain, fell_back, 8);
  EXPECT_EQ(c.max_diff_rel, 0.0) << "not ORT's kernels";
  // Unarmed, the same options load ebb's kernel.
  EXPECT_THAT(ebb::LoadModel(src, on)->info().kernels, HasSubstr("ebb.cpu.MatMulNBits x"));
}

// The option cpu_ops moves the nodes at load, as tools/cpu_ops_model.py moves them in a folder:
// the same kernels on the same graph give the same logits, bit for bit; the kernels line says
// what moved and where the kernels are; the model cache stores the moved graph, and a load from
// it runs the same kernels.
TEST(CpuOps, TheCpuOpsOptionMovesTheNodesAtLoadAsTheToolDoesAndTheCacheKeepsThem) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  // On a CPU without AVX2 + FMA the tool leaves the matmuls too (it checks the CPU as the option
  // does).
  const fs::path tool = Rewrite(d, src, "tool", "--ops matmul,gqa");
  const ModelOptions off = Uncached("off"), on = Uncached("auto");
  auto rewritten_by_tool = ebb::LoadModel(tool, off);
  auto moved_at_load = ebb::LoadModel(src, on);
  auto plain = ebb::LoadModel(src, off);
  const std::string kernels = moved_at_load->info().kernels;
  EXPECT_THAT(kernels, HasSubstr("ebb.cpu.GroupQueryAttention x2"));
  EXPECT_THAT(kernels, HasSubstr("ebb (built in, cpu_ops=auto)"));
  if (HasMatMulKernel()) {
    EXPECT_THAT(kernels, HasSubstr("ebb.cpu.MatMulNBits x"));
    EXPECT_THAT(kernels, ::testing::Not(HasSubstr("MatMulNBits x15: MLAS")));
  }
  EXPECT_THAT(plain->info().kernels, ::testing::Not(HasSubstr("ebb.cpu")));
  EXPECT_TRUE(moved_at_load->info().uses_gqa);
  EXPECT_TRUE(moved_at_load->info().past_present_share_buffer);
  const Compared same = TeacherForced(rewritten_by_tool, moved_at_load, 12);
  EXPECT_EQ(same.max_diff_rel, 0.0) << "the same kernels on the same graph";
  // ...and not ORT's: their arithmetic differs in the last bits (docs/cpu_ops.md "Numbers").
  EXPECT_GT(TeacherForced(plain, moved_at_load, 4).max_diff_rel, 0.0)
      << "ebb's kernels did not run";
  // Only the attention: the matmuls stay MLAS's.
  auto attention_only = ebb::LoadModel(src, Uncached("attention"));
  EXPECT_THAT(attention_only->info().kernels, HasSubstr("ebb.cpu.GroupQueryAttention x2"));
  EXPECT_THAT(attention_only->info().kernels, ::testing::Not(HasSubstr("ebb.cpu.MatMulNBits")));
  EXPECT_THAT(attention_only->info().kernels, HasSubstr("MatMulNBits x"));

  // Through the model cache: the building load, then a load from the entry.
  ModelOptions cached = on;
  cached.Set("model_cache.dir", (d.path() / "cache").string());
  {
    auto building = ebb::LoadModel(src, cached);
    EXPECT_EQ(building->info().kernels, kernels);
    ASSERT_EQ(testing::WaitForCacheBuild(*building).cache, "built");
  }
  // The int4 matmul kernel's repacked weights are files of the entry (one per moved node), which
  // the load from the entry maps instead of repacking into anonymous memory.
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(d.path() / "cache")) {
    if (e.is_directory() && e.path().filename().string().rfind(".", 0) != 0) {
      entries.push_back(e.path());
    }
  }
  ASSERT_EQ(entries.size(), 1u);
  int packs = 0;
  for (const auto& f : fs::directory_iterator(entries[0])) {
    packs += f.path().extension() == ".pack" ? 1 : 0;
  }
  auto from_entry = ebb::LoadModel(src, cached);
  EXPECT_EQ(from_entry->runtime().Stats().weights.cache, "loaded");
  EXPECT_EQ(from_entry->info().kernels, kernels);
  if (HasMatMulKernel()) {
    const std::string moved = kernels.substr(kernels.find("ebb.cpu.MatMulNBits x") + 21);
    EXPECT_EQ(packs, std::stoi(moved));
    std::set<std::string> mapped;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      if (line.find(entries[0].string()) != std::string::npos && line.ends_with(".pack")) {
        mapped.insert(line.substr(line.rfind('/')));
      }
    }
    EXPECT_EQ(static_cast<int>(mapped.size()), packs) << "the load from the entry maps each pack";
  } else {
    EXPECT_EQ(packs, 0);
  }
  const Compared entry = TeacherForced(moved_at_load, from_entry, 12);
  EXPECT_EQ(entry.tokens, same.tokens);
  EXPECT_EQ(entry.argmax_agree, entry.steps);
  if (packs > 0) {
    // A pack file changed after the entry was written (its header zeroed here): the manifest no
    // longer matches, so the load rebuilds the entry instead of running from that file.
    fs::path pack;
    for (const auto& f : fs::directory_iterator(entries[0])) {
      if (f.path().extension() == ".pack") pack = f.path();
    }
    fs::permissions(pack, fs::perms::owner_write, fs::perm_options::add);
    {
      std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
      const std::string zeros(64, '\0');
      f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    }
    auto after_change = ebb::LoadModel(src, cached);
    EXPECT_NE(after_change->runtime().Stats().weights.cache, "loaded");
    EXPECT_EQ(after_change->info().kernels, kernels);
    EXPECT_EQ(TeacherForced(moved_at_load, after_change, 12).max_diff_rel, 0.0);
  }
  // cpu_ops is part of the entry's key: the same folder with ORT's kernels does not load it.
  ModelOptions cached_off = cached;
  cached_off.Set("cpu_ops", "off");
  auto other = ebb::LoadModel(src, cached_off);
  EXPECT_NE(other->runtime().Stats().weights.cache, "loaded");
  EXPECT_THAT(other->info().kernels, ::testing::Not(HasSubstr("ebb.cpu")));
}

// cpu_ops=auto with the compiled-model cache in `cache`.
ModelOptions CachedIn(const fs::path& cache) {
  ModelOptions o = Uncached("auto");
  o.Set("model_cache.dir", cache.string());
  return o;
}

// A load that cannot read the model file to plan the move (its mapping refused for want of
// memory: injected here, found under RLIMIT_AS by
// ModelCache.OutOfMemoryWhileLoadingTheEntryKeepsIt)
// - builds no cache entry: the graph it would write keeps ORT's kernels, under a key that says
//   cpu_ops=auto, and every later load would map that;
// - still loads an entry an earlier load built with the nodes moved: ebb's kernels are registered
//   when the plan could not read the graph too. Before, ORT refused that entry
//   ("ebb.cpu:MatMulNBits is not a registered function/op") and ebb removed it.
TEST(CpuOps, ALoadThatCannotReadTheGraphBuildsNoEntryButLoadsOne) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  const fs::path cache = d.path() / "cache";
  const ModelOptions cached = CachedIn(cache);
  auto plain = ebb::LoadModel(src, Uncached("off"));
  auto moved = ebb::LoadModel(src, Uncached("auto"));
  const std::string kernels = moved->info().kernels;
  ASSERT_THAT(kernels, HasSubstr("ebb.cpu."));
  LogCapture log;

  // No entry yet: the load runs on ORT's kernels and builds none.
  {
    auto unread = LoadWithFailures(src, cached, platform::testing::Op::kMapFile, 0);
    EXPECT_THAT(unread->info().kernels, ::testing::Not(HasSubstr("ebb.cpu")));
    EXPECT_EQ(testing::WaitForCacheBuild(*unread).cache, "skipped");
    EXPECT_EQ(TeacherForced(plain, unread, 8).max_diff_rel, 0.0) << "not ORT's kernels";
  }
  EXPECT_TRUE(CacheEntries(cache).empty())
      << "an entry was built from a graph the load could not read";
  std::string text = log.Take();
  EXPECT_THAT(text, HasSubstr("cannot map the file: Cannot allocate memory"));
  EXPECT_THAT(text, HasSubstr("not building"));
  // The next load builds the entry with the nodes moved.
  {
    auto building = ebb::LoadModel(src, cached);
    EXPECT_EQ(building->info().kernels, kernels);
    ASSERT_EQ(testing::WaitForCacheBuild(*building).cache, "built");
  }
  ASSERT_EQ(CacheEntries(cache).size(), 1u);
  const fs::path entry = CacheEntries(cache)[0];
  const auto built_at = fs::last_write_time(entry / "manifest.json");
  log.Take();
  // A load that cannot read the graph maps that entry and runs ebb's kernels from it.
  auto from_entry = LoadWithFailures(src, cached, platform::testing::Op::kMapFile, 0);
  text = log.Take();
  EXPECT_THAT(text, HasSubstr("cannot map the file: Cannot allocate memory"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("rebuilding")));
  EXPECT_EQ(from_entry->runtime().Stats().weights.cache, "loaded");
  EXPECT_EQ(from_entry->info().kernels, kernels);
  const Compared c = TeacherForced(moved, from_entry, 12);
  EXPECT_EQ(c.argmax_agree, c.steps);
  ASSERT_EQ(CacheEntries(cache).size(), 1u);
  EXPECT_EQ(fs::last_write_time(entry / "manifest.json"), built_at);
}

// The cache build writes the graph with ebb's rewrites (last-position logits, the moved nodes),
// as its key says. When the system stops one of them in the build (here: the build's mapping of
// model.onnx for the last-logits rewrite, the load's second mapping of a file, refused), the
// build stops and writes no entry, where it used to write the graph without that rewrite, which
// every later load would then map. The load itself runs with both rewrites.
TEST(CpuOps, ACacheBuildWhoseRewriteTheSystemStoppedWritesNoEntry) {
  SKIP_WITHOUT(HasAvx2(), "AVX2 + FMA + F16C");
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-int4-b32";
  const fs::path cache = d.path() / "cache";
  const ModelOptions cached = CachedIn(cache);
  const std::string kernels = ebb::LoadModel(src, Uncached("auto"))->info().kernels;
  LogCapture log;
  {
    auto model = LoadWithFailures(src, cached, platform::testing::Op::kMapFile, 1);
    EXPECT_EQ(model->runtime().Stats().weights.cache, "skipped");
    EXPECT_EQ(model->info().kernels, kernels);
    EXPECT_TRUE(model->info().last_position_logits);
  }
  const std::string text = log.Take();
  EXPECT_THAT(text, HasSubstr("not caching"));
  EXPECT_THAT(text, HasSubstr("prefill_logits=last could not rewrite the graph"));
  EXPECT_TRUE(CacheEntries(cache).empty());
  // Unarmed, the next load builds it.
  auto building = ebb::LoadModel(src, cached);
  EXPECT_EQ(testing::WaitForCacheBuild(*building).cache, "built");
  EXPECT_EQ(CacheEntries(cache).size(), 1u);
}

// Where nothing can move, cpu_ops=auto changes nothing and never fails the load: an fp16 cache
// (the kernel takes fp32), a graph without GroupQueryAttention or MatMulNBits (gpt2's MatMul and
// Attention), an encoder. The same greedy tokens as with ORT's kernels alone.
TEST(CpuOps, TheCpuOpsOptionLeavesGraphsItCannotMoveAsTheyAre) {
  const ModelOptions off = Uncached("off"), on = Uncached("auto");
  for (const char* name : {"llama-tiny-fp16io", "gpt2-tiny-fp32", "bert-tiny-fp32"}) {
    SCOPED_TRACE(name);
    const fs::path dir = testing::TestModelsDir() / name;
    auto a = ebb::LoadModel(dir, on);
    auto b = ebb::LoadModel(dir, off);
    EXPECT_THAT(a->info().kernels, ::testing::Not(HasSubstr("ebb.cpu")));
    EXPECT_EQ(a->info().kernels, b->info().kernels);
    if (a->info().is_encoder) continue;
    GeneratorParams p;
    p.max_length = 24;
    Generator ga(a, p), gb(b, p);
    EXPECT_EQ(Greedy(ga, {5, 17, 42, 7}), Greedy(gb, {5, 17, 42, 7}));
  }
}

// A bad value names the accepted ones.
TEST(CpuOps, ABadCpuOpsValueIsRefusedNamingTheChoices) {
  ModelOptions o;
  try {
    o.Set("cpu_ops", "fast");
    ADD_FAILURE() << "cpu_ops=fast was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not one of: off auto attention matmul"));
  }
}

TEST(CpuOps, TheRewriteRefusesAnFp16KvThatOrtsKernelWouldRead) {
  TempDir d;
  const fs::path src = testing::TestModelsDir() / "llama-tiny-fp32";
  const std::string cmd = "timeout 120 /usr/bin/python3 " + std::string(EBB_SOURCE_DIR) +
                          "/tools/cpu_ops_model.py --model-dir " + src.string() + " --out " +
                          (d.path() / "x").string() + " --library " + EBB_TEST_CPU_OPS_LIB +
                          " --ops matmul --kv-fp16 > " + (d.path() / "x.log").string() + " 2>&1";
  EXPECT_NE(RunShell(cmd), 0);
  EXPECT_THAT(ReadFile(d.path() / "x.log"), HasSubstr("--kv-fp16 needs gqa in --ops"));
}

}  // namespace
}  // namespace ebb
