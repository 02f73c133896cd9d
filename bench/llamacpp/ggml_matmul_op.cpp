// bench/llamacpp/ggml_matmul_op.cpp — libebb_ggml_matmul.so: an ONNX Runtime custom op that runs
// ggml's Q4_0 mul_mat (ggml's CPU backend: AMX, CPU_REPACK or plain CPU kernels) in place of
// com.microsoft MatMulNBits (issue 28 item 3: "bring a better kernel in"). A prototype for
// measuring ggml's kernels inside ORT, not a supported part of ebb.
//
// Op: domain ebb.ggml, type MatMulQ4_0 (opset 1), CPU execution provider.
//   inputs   A  float [..., K]
//            W  uint8, ggml Q4_0 rows: N rows of K/32 blocks of 18 bytes (fp16 d, then 16 bytes:
//               low nibbles = elements 0..15, high nibbles = 16..31, value = d * (q - 8)); any
//               shape with N * K/32 * 18 elements ([N, K/32 * 18] from ggml_op_model.py). Must be
//               a constant initializer: it is repacked once, at kernel creation.
//   attrs    K, N (ints)
//   output   Y  float [..., N] = A W^T
//
// Library entry point: RegisterCustomOps (Ort::SessionOptions::RegisterCustomOpsLibrary, or
// genai_config.json's model.decoder.session_options.custom_ops_library).
//
// Threads: ggml's own thread pool is never created. Kernel creation cuts N into P row blocks
// (P = std::thread::hardware_concurrency(), fewer when a block would have under 32 rows; every
// block a multiple of 32 rows, which AMX needs, plus one block of the N % 32 remainder rows when
// there is one). Compute runs the blocks with KernelContext_ParallelFor on ORT's intra-op pool,
// each as one single-threaded ggml CPU backend call (the --ggml-threads caller design of
// matmul_probe.cpp, measured as fast as ggml's own pool).
//
// Backend: loaded once per process (unless the process already has a ggml CPU backend) from
// EBB_LLAMACPP_BIN_DIR (the best libggml-cpu-<isa>.so for this CPU, as llama.cpp picks it), or
// the one env EBB_GGML_CPU_BACKEND names (an ISA such as "haswell" for libggml-cpu-haswell.so in
// that folder, or a path). Weights go to the first buffer
// type that runs this multiply (the device's extra types first, AMX before CPU_REPACK, as
// llama.cpp's loader does), chosen per block; env EBB_GGML_BUFT=AMX|CPU_REPACK|CPU forces one.
// The first kernel prints the backend .so and each new buffer type to stderr, once per process.
//
// Memory: the repacked copy is the op's (anonymous: ggml's AMX buffer cannot wrap a mapped file).
// ORT keeps W for the session's life; once repacked its pages are handed back (DropSourcePages;
// env EBB_GGML_KEEP_SOURCE_PAGES=1 keeps them).
//
// Concurrency: one process-wide set of single-threaded backends ("slots"), block i of every
// kernel computing on slot i under slot i's mutex. A backend's state is its work buffer (A
// quantized to int8), so shared slots bound that memory by P buffers instead of P per matrix; two
// sessions (or two Runs of one) that reach block i at once take turns. Each block caches its ggml
// graph per M (at most kGraphCacheSize values; others are built per call), guarded by the same
// mutex since a graph's input and output pointers are set per call.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_weights.h"

#define ORT_API_MANUAL_INIT
#include "onnxruntime_cxx_api.h"
#undef ORT_API_MANUAL_INIT

#ifndef EBB_LLAMACPP_BIN_DIR
#error "EBB_LLAMACPP_BIN_DIR (the folder with libggml-cpu-*.so) must be defined"
#endif

namespace {

constexpr const char* kDomain = "ebb.ggml";
constexpr const char* kOpType = "MatMulQ4_0";
constexpr long kQ4Block = 32;           // elements per Q4_0 block
constexpr long kQ4BlockBytes = 18;      // fp16 scale + 16 bytes of nibbles
constexpr long kRowUnit = 32;           // rows per block are a multiple of this (AMX: 2 * TILE_N)
constexpr size_t kGraphCacheSize = 16;  // M values cached per block

const OrtApi* g_api = nullptr;  // set by RegisterCustomOps

OrtStatus* Error(const std::string& what) {
  return g_api->CreateStatus(ORT_FAIL,
                             (std::string(kDomain) + "." + kOpType + ": " + what).c_str());
}

// One single-threaded ggml CPU backend and the scratch it writes results to. Used only under
// `mu`.
struct Slot {
  std::mutex mu;
  ggml_backend_t backend = nullptr;
  // [M, rows] of the block being computed (ggml's dst layout), 64-byte aligned: AMX's Q4_0 kernel
  // accumulates into dst once per 32-block of K, and a 16-byte aligned dst (std::vector's) made a
  // 3072 x 1536 block at M = 512 take 35 ms instead of 19 ms (every 64-byte access split).
  float* scratch = nullptr;
  size_t scratch_floats = 0;

  float* Scratch(size_t floats) {
    if (scratch_floats < floats) {
      std::free(scratch);
      const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      scratch = static_cast<float*>(std::aligned_alloc(64, bytes));
      scratch_floats = scratch ? floats : 0;
    }
    return scratch;
  }
};

// ggml's CPU device, loaded once per process; never unloaded (kernels may outlive any session
// order, and ggml keeps its registry to process exit).
struct Ggml {
  std::string error;  // non-empty: loading failed, every kernel creation reports it
  ggml_backend_dev_t dev = nullptr;
  ggml_backend_reg_t reg = nullptr;
  ggml_backend_set_n_threads_t set_n_threads = nullptr;
  std::string backend_lib;
  std::string features;
  std::vector<std::unique_ptr<Slot>> slots;  // grown under slots_mu, never shrunk
  std::mutex slots_mu;
  std::mutex print_mu;
  std::set<std::string> printed_bufts;

  // The slot for block i (created on first use; pointers stay valid).
  Slot* GetSlot(size_t i) {
    std::lock_guard<std::mutex> lk(slots_mu);
    while (slots.size() <= i) {
      auto s = std::make_unique<Slot>();
      s->backend = ggml_backend_dev_init(dev, nullptr);
      if (!s->backend) return nullptr;
      set_n_threads(s->backend, 1);
      slots.push_back(std::move(s));
    }
    return slots[i].get();
  }

  void PrintOnce(const std::string& buft) {
    std::lock_guard<std::mutex> lk(print_mu);
    if (!printed_bufts.insert(buft).second) return;
    if (printed_bufts.size() == 1) {
      std::fprintf(stderr, "%s.%s: ggml CPU backend %s (%s)\n", kDomain, kOpType,
                   backend_lib.c_str(), features.c_str());
    }
    std::fprintf(stderr, "%s.%s: weights in ggml buffer type %s\n", kDomain, kOpType, buft.c_str());
  }
};

Ggml& GetGgml() {
  static Ggml g;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("EBB_GGML_CPU_BACKEND");
    if (env && *env) {
      const std::string v = env;
      const std::string path = v.find('/') == std::string::npos
                                   ? std::string(EBB_LLAMACPP_BIN_DIR) + "/libggml-cpu-" + v + ".so"
                                   : v;
      if (!ggml_backend_load(path.c_str())) {
        g.error = "EBB_GGML_CPU_BACKEND: could not load " + path;
        return;
      }
    } else if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
      // Not when the process already holds a CPU backend (ggml's registry is process-wide: the
      // host, e.g. matmul_probe, loaded one): a second copy would be registered after it, unused.
      ggml_backend_load_all_from_path(EBB_LLAMACPP_BIN_DIR);
    }
    g.dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!g.dev) {
      g.error = std::string("no ggml CPU backend loaded from ") + EBB_LLAMACPP_BIN_DIR +
                " (set EBB_GGML_CPU_BACKEND to a libggml-cpu-*.so)";
      return;
    }
    g.reg = ggml_backend_dev_backend_reg(g.dev);
    g.set_n_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(g.reg, "ggml_backend_set_n_threads"));
    if (!g.set_n_threads) {
      g.error = "the ggml CPU backend lacks ggml_backend_set_n_threads";
      return;
    }
    if (auto f = reinterpret_cast<ggml_backend_get_features_t>(
            ggml_backend_reg_get_proc_address(g.reg, "ggml_backend_get_features"))) {
      for (ggml_backend_feature* x = f(g.reg); x && x->name; ++x) {
        g.features += std::string(g.features.empty() ? "" : " ") + x->name + "=" + x->value;
      }
    }
    // Which shared object holds the device's code: dladdr on one of its functions.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(g.set_n_threads), &info) && info.dli_fname) {
      g.backend_lib = info.dli_fname;
    }
  });
  return g;
}

// The graph of one block for one M: y [rows, M] = w [K, rows] x [K, M] in ggml's ne order. No
// allocator: x->data points at A (read in place: its alignment did not change the time) and
// y->data at Y (M = 1) or the slot's scratch, set per call.
struct Graph {
  ggml_context* ctx = nullptr;
  ggml_cgraph* gf = nullptr;
  ggml_tensor* x = nullptr;
  ggml_tensor* y = nullptr;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (ctx) ggml_free(ctx);
  }
};

// One row block of W: rows [row0, row0 + rows) in their own ggml buffer.
struct Block {
  long row0 = 0, rows = 0;
  size_t slot = 0;
  ggml_context* wctx = nullptr;
  ggml_tensor* w = nullptr;
  ggml_backend_buffer_t wbuf = nullptr;
  std::string buft;
  std::map<long, std::unique_ptr<Graph>> graphs;  // by M; guarded by the slot's mutex

  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    graphs.clear();
    if (wbuf) ggml_backend_buffer_free(wbuf);
    if (wctx) ggml_free(wctx);
  }

  std::unique_ptr<Graph> Build(long k, long m) const {
    auto g = std::make_unique<Graph>();
    const size_t nodes = 4;
    ggml_init_params ip = {ggml_tensor_overhead() * 4 + ggml_graph_overhead_custom(nodes, false),
                           nullptr, true};
    g->ctx = ggml_init(ip);
    if (!g->ctx) return nullptr;
    g->x = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, k, m);
    g->y = ggml_mul_mat(g->ctx, w, g->x);
    g->gf = ggml_new_graph_custom(g->ctx, nodes, false);
    ggml_build_forward_expand(g->gf, g->y);
    return g;
  }
};

// Puts Q4_0 rows [row0, row0 + rows) (of `q4`, K/32 * 18 bytes each) into the first buffer type
// that supports W x A on this device (or the one EBB_GGML_BUFT names). Returns "" or the reason.
std::string LoadBlock(Ggml& gg, Block& b, long k, const uint8_t* q4) {
  const std::vector<ggml_backend_buffer_type_t> cands = ggml_weights::Candidates(gg.reg, gg.dev);
  const char* want = std::getenv("EBB_GGML_BUFT");
  std::string seen;
  const size_t row_bytes = static_cast<size_t>(k / kQ4Block * kQ4BlockBytes);
  for (ggml_backend_buffer_type_t bt : cands) {
    const std::string name = ggml_backend_buft_name(bt);
    seen += (seen.empty() ? "" : ", ") + name;
    if (want && *want && name != want) continue;
    ggml_init_params ip = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context* ctx = ggml_init(ip);
    ggml_tensor* t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, k, b.rows);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, bt);
    if (!buf) {
      ggml_free(ctx);
      continue;
    }
    if (!ggml_weights::MultipliesFrom(gg.dev, t, k)) {
      ggml_backend_buffer_free(buf);
      ggml_free(ctx);
      continue;
    }
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    // Repacks for AMX / CPU_REPACK; a plain copy for CPU.
    ggml_backend_tensor_set(t, q4 + row_bytes * static_cast<size_t>(b.row0), 0,
                            row_bytes * static_cast<size_t>(b.rows));
    b.wctx = ctx;
    b.w = t;
    b.wbuf = buf;
    b.buft = name;
    return "";
  }
  return "no ggml buffer type" + (want && *want ? " '" + std::string(want) + "'" : std::string()) +
         " supports a " + std::to_string(k) + " x " + std::to_string(b.rows) +
         " Q4_0 multiply (have: " + seen + ")";
}

struct Kernel;

// One Compute call's shared state for the ParallelFor tasks.
struct Call {
  Kernel* kernel;
  const float* a;
  float* y;
  long m;
  std::mutex mu;
  std::string error;  // the first failing block's reason
};

struct Kernel {
  long k = 0, n = 0;
  std::vector<std::unique_ptr<Block>> blocks;

  // Block i of call c: y[:, row0 : row0 + rows] = A W[row0 : row0 + rows]^T.
  void RunBlock(Call& c, size_t i) {
    Block& b = *blocks[i];
    Slot* s = GetGgml().GetSlot(b.slot);
    if (!s) {
      std::lock_guard<std::mutex> lk(c.mu);
      if (c.error.empty()) c.error = "ggml_backend_dev_init failed";
      return;
    }
    std::lock_guard<std::mutex> lk(s->mu);
    std::unique_ptr<Graph> temp;
    Graph* g = nullptr;
    auto it = b.graphs.find(c.m);
    if (it != b.graphs.end()) {
      g = it->second.get();
    } else {
      temp = b.Build(k, c.m);
      g = temp.get();
      if (g && b.graphs.size() < kGraphCacheSize) b.graphs.emplace(c.m, std::move(temp));
    }
    if (!g) {
      std::lock_guard<std::mutex> elk(c.mu);
      if (c.error.empty()) c.error = "ggml_init failed (graph of M = " + std::to_string(c.m) + ")";
      return;
    }
    // ggml reads A in place (contiguous [M, K] floats is ggml's [K, M] F32 layout) and, for
    // M = 1, writes its rows straight into Y; for M > 1 its [M, rows] result is gathered.
    g->x->data = const_cast<float*>(c.a);
    // Y itself when M = 1 and Y's rows start 64-byte aligned (ORT's allocator aligns to 64; a
    // caller's buffer may not), else the scratch, gathered below.
    float* direct = c.y + b.row0;
    const bool in_place = c.m == 1 && reinterpret_cast<uintptr_t>(direct) % 64 == 0;
    if (in_place) {
      g->y->data = direct;
    } else {
      float* p = s->Scratch(static_cast<size_t>(c.m) * static_cast<size_t>(b.rows));
      if (!p) {
        std::lock_guard<std::mutex> elk(c.mu);
        if (c.error.empty()) c.error = "out of memory (result scratch)";
        return;
      }
      g->y->data = p;
    }
    if (ggml_backend_graph_compute(s->backend, g->gf) != GGML_STATUS_SUCCESS) {
      std::lock_guard<std::mutex> elk(c.mu);
      if (c.error.empty()) c.error = "ggml_backend_graph_compute failed";
      return;
    }
    if (!in_place) {
      const size_t rows = static_cast<size_t>(b.rows), nn = static_cast<size_t>(n);
      for (size_t r = 0; r < static_cast<size_t>(c.m); ++r) {
        std::memcpy(c.y + r * nn + static_cast<size_t>(b.row0), s->scratch + r * rows,
                    rows * sizeof(float));
      }
    }
  }

  static void Task(void* user, size_t i) {
    Call& c = *static_cast<Call*>(user);
    try {
      c.kernel->RunBlock(c, i);
    } catch (const std::exception& e) {  // must not cross ORT's thread pool
      std::lock_guard<std::mutex> lk(c.mu);
      if (c.error.empty()) c.error = e.what();
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      Ort::ConstValue a = ctx.GetInput(0);
      Ort::TensorTypeAndShapeInfo info = a.GetTensorTypeAndShapeInfo();
      if (info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        return Error("A must be float");
      }
      std::vector<int64_t> shape = info.GetShape();
      if (shape.empty() || shape.back() != k) {
        return Error("A's last dimension must be K = " + std::to_string(k));
      }
      long m = 1;
      for (size_t d = 0; d + 1 < shape.size(); ++d) m *= static_cast<long>(shape[d]);
      shape.back() = n;
      Ort::UnownedValue y = ctx.GetOutput(0, shape);
      if (m == 0) return nullptr;
      Call c{this, a.GetTensorData<float>(), y.GetTensorMutableData<float>(), m, {}, {}};
      Ort::ThrowOnError(
          g_api->KernelContext_ParallelFor(context, &Kernel::Task, blocks.size(), 0, &c));
      if (!c.error.empty()) return Error(c.error);
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }
};

std::string NodeName(const Ort::ConstKernelInfo& ki) {
  const std::string name = ki.GetNodeName();
  return name.empty() ? "(unnamed)" : "'" + name + "'";
}

// The Q4_0 bytes are never read again once repacked: every call multiplies by the repacked copy.
// When ORT maps them from a file (the compiled-model cache's entry, or external data), their
// resident pages are handed back to the kernel now, so the weights are not held twice (the copy
// and the file's pages); they stay mapped, and a read would fault them in again from the file.
// MADV_PAGEOUT (Linux 5.4) reclaims clean file-backed pages at once and is only a hint for any
// other memory (anonymous pages without swap stay as they are), so it never changes what the
// bytes read. An older kernel refuses the advice (EINVAL), which costs only the memory.
void DropSourcePages(const uint8_t* data, size_t bytes) {
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
}

struct MatMulQ4_0Op : Ort::CustomOpBase<MatMulQ4_0Op, Kernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** out) const {
    (void)api;
    try {
      Ort::ConstKernelInfo ki(info);
      const long k = static_cast<long>(ki.GetAttribute<int64_t>("K"));
      const long n = static_cast<long>(ki.GetAttribute<int64_t>("N"));
      if (k <= 0 || n <= 0 || k % kQ4Block) {
        return Error(
            "attributes K (a positive multiple of 32) and N (positive) are required, got "
            "K = " +
            std::to_string(k) + ", N = " + std::to_string(n));
      }
      int is_constant = 0;
      Ort::ConstValue w = ki.GetTensorConstantInput(1, &is_constant);
      if (!is_constant || !static_cast<const OrtValue*>(w)) {
        return Error("input W (node " + NodeName(ki) +
                     ") must be a constant initializer: it is repacked once, at kernel creation");
      }
      Ort::TensorTypeAndShapeInfo wi = w.GetTensorTypeAndShapeInfo();
      const size_t want =
          static_cast<size_t>(n) * static_cast<size_t>(k / kQ4Block) * kQ4BlockBytes;
      if (wi.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 ||
          wi.GetElementCount() != want) {
        return Error("W (node " + NodeName(ki) + ") must be uint8 with N * K/32 * 18 = " +
                     std::to_string(want) + " elements (Q4_0 rows)");
      }
      Ggml& gg = GetGgml();
      if (!gg.error.empty()) return Error(gg.error);

      // Row blocks: P blocks of whole 32-row units (P = cores, fewer when a block would have
      // none), then the N % 32 remainder rows as a block of their own.
      const long units = n / kRowUnit, rest = n % kRowUnit;
      const long hw = std::max(1L, static_cast<long>(std::thread::hardware_concurrency()));
      const long p = std::min(hw, units);
      auto kernel = std::make_unique<Kernel>();
      kernel->k = k;
      kernel->n = n;
      long row = 0;
      for (long i = 0; i < p; ++i) {
        const long u = units / p + (i < units % p ? 1 : 0);
        auto b = std::make_unique<Block>();
        b->row0 = row;
        b->rows = u * kRowUnit;
        row += b->rows;
        kernel->blocks.push_back(std::move(b));
      }
      if (rest) {
        auto b = std::make_unique<Block>();
        b->row0 = row;
        b->rows = rest;
        kernel->blocks.push_back(std::move(b));
      }
      const auto* q4 = w.GetTensorData<uint8_t>();
      for (size_t i = 0; i < kernel->blocks.size(); ++i) {
        Block& b = *kernel->blocks[i];
        b.slot = i;
        const std::string why = LoadBlock(gg, b, k, q4);
        if (!why.empty()) return Error("node " + NodeName(ki) + ": " + why);
        gg.PrintOnce(b.buft);
      }
      if (const char* keep = std::getenv("EBB_GGML_KEEP_SOURCE_PAGES"); !keep || !*keep) {
        DropSourcePages(q4, want);
      }
      *out = kernel.release();
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }

  const char* GetName() const { return kOpType; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t i) const {
    return i == 0 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
};

}  // namespace

// ORT's entry point for a custom op library: registers domain ebb.ggml with MatMulQ4_0. The op and
// domain objects live to process exit (ORT keeps pointers to them in every session that uses them);
// the library is linked -z nodelete, so ORT's dlclose after the last session does not unmap them
// (nor leak the per-process ggml backends and scratch buffers on every reload).
extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(ORT_API_VERSION);
  if (!api) {
    // An older ORT than these headers. API version 1 always exists and can still say so: a
    // nullptr here would read as success with nothing registered.
    const std::string why = std::string(kDomain) + ": this ONNX Runtime lacks API version " +
                            std::to_string(ORT_API_VERSION) + " (built against newer headers)";
    return api_base->GetApi(1)->CreateStatus(ORT_FAIL, why.c_str());
  }
  static const bool api_set = [api] {  // once, before any kernel can read g_api
    g_api = api;
    Ort::InitApi(api);
    return true;
  }();
  (void)api_set;
  static MatMulQ4_0Op op;
  static OrtCustomOpDomain* domain = [api] {
    OrtCustomOpDomain* d = nullptr;
    if (OrtStatus* st = api->CreateCustomOpDomain(kDomain, &d)) {
      api->ReleaseStatus(st);
      return static_cast<OrtCustomOpDomain*>(nullptr);
    }
    if (OrtStatus* st = api->CustomOpDomain_Add(d, &op)) {
      api->ReleaseStatus(st);
      return static_cast<OrtCustomOpDomain*>(nullptr);
    }
    return d;
  }();
  if (!domain) return api->CreateStatus(ORT_FAIL, "ebb.ggml: could not create the op domain");
  return api->AddCustomOpDomain(options, domain);
}
