// bench/llamacpp/matmul_probe.cpp — one int4 matrix multiply, ORT's MatMulNBits against ggml's
// Q4_0 mul_mat on exactly the same weights (issue 28 item 1: where the time goes per kernel).
//
//   matmul_probe --model PREFIX [--m 1,128,512] [--threads 2] [--rounds 20] [--buft auto]
//                [--cpu-backend native|haswell|PATH] [--engines both|ort|ggml]
//                [--ggml-threads pool|caller] [--ort-config KEY=VALUE]...
//                [--op-library libebb_ggml_matmul.so --op-model PREFIX_op.onnx]
//
// PREFIX.onnx / PREFIX.q4_0 / PREFIX.json come from bench/llamacpp/matmul_model.py (one
// MatMulNBits node, accuracy_level 4, and the same codes and scales as ggml Q4_0 rows).
// For each M both engines multiply the same activations A [M, K] (seeded, N(0, 1)) by W^T in one
// process, one engine at a time (--rounds calls each, after 3 warm-up calls and a --gap-ms sleep
// that lets the other engine's spinning workers park). Prints one JSON
// line per M: per engine the median and best seconds per multiply over --rounds, GB/s of weights
// read (the engine's own weight bytes / median time) and GFLOP/s (2 M N K / median time), ggml's
// buffer type (CPU_REPACK, AMX or CPU: which layout and kernels ggml picked), and the largest
// difference between the two outputs relative to the largest |output| (both quantize A to int8, per
// block: MLAS per MatMulNBits block, ggml per 32).
//
// ORT: intra_op_num_threads = --threads, ebb's other defaults (spinning on). ggml: the CPU
// backend from EBB_LLAMACPP_BIN_DIR (native = the best libggml-cpu-<isa>.so for this CPU, as
// llama.cpp loads it), n_threads = --threads, one persistent thread pool (as a llama.cpp context
// with a pool attached), weights in the first buffer type that supports this multiply (auto:
// the device's extra types first, as llama.cpp's loader does; or the one --buft names).
// --ggml-threads caller instead cuts the matrix into --threads row blocks and runs one
// single-threaded ggml call per block on the probe's own spinning threads (the caller and
// persistent workers): the way an ORT custom op would have to run ggml inside ORT's intra-op pool
// (KernelContext_ParallelFor) rather than next to it. --layers chains (matmul_model.py) stream
// every weight from DRAM once per call.
// --op-library / --op-model add a third engine, "op": the model rewritten by
// bench/llamacpp/ggml_op_model.py --onnx (ebb.ggml.MatMulQ4_0, libebb_ggml_matmul.so: ggml's
// kernels inside ORT), in a second ORT session with the same options and the library registered.
// It is timed after ORT's block, one engine at a time like the others; its JSON fields are op_*,
// ort_over_op_time, and max_diff_rel_op (against ORT's MatMulNBits output) and, with ggml
// measured too, max_diff_rel_op_ggml (against ggml called directly: the same kernels, ~0).
// --engines takes a comma list of ort, ggml, op (both = ort,ggml; default: both, plus op when
// --op-model is given).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_weights.h"
#include "onnxruntime_cxx_api.h"

#ifndef EBB_LLAMACPP_BIN_DIR
#error "EBB_LLAMACPP_BIN_DIR (the folder with libggml-cpu-*.so) must be defined"
#endif

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "matmul_probe: %s\n", why.c_str());
  std::exit(1);
}

struct Args {
  std::string model;
  std::vector<int> ms = {1, 128, 512};
  int threads = 2;
  int rounds = 20;
  int gap_ms = 300;
  std::string buft = "auto";
  std::string cpu_backend = "native";
  std::string engines = "both";       // comma list of ort, ggml, op; both = ort,ggml
  std::string op_library, op_model;   // the "op" engine (ggml_op_model.py's rewrite)
  std::string ggml_threads = "pool";  // pool: ggml's own threads; caller: one ggml call per thread
  std::vector<std::pair<std::string, std::string>> ort_config;  // session config entries
};

bool HasEngine(const Args& a, const std::string& e);

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      a.model = v;
    } else if (k == "--m") {
      a.ms.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) a.ms.push_back(std::atoi(x.c_str()));
    } else if (k == "--threads") {
      a.threads = std::atoi(v.c_str());
    } else if (k == "--rounds") {
      a.rounds = std::atoi(v.c_str());
    } else if (k == "--gap-ms") {
      a.gap_ms = std::atoi(v.c_str());
    } else if (k == "--buft") {
      a.buft = v;
    } else if (k == "--cpu-backend") {
      a.cpu_backend = v;
    } else if (k == "--engines") {
      a.engines = v;
    } else if (k == "--op-library") {
      a.op_library = v;
    } else if (k == "--op-model") {
      a.op_model = v;
    } else if (k == "--ggml-threads") {
      a.ggml_threads = v;
    } else if (k == "--ort-config") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos) Die("--ort-config needs KEY=VALUE, got '" + v + "'");
      a.ort_config.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      Die("unknown option " + k);
    }
  }
  if (a.model.empty() || a.threads < 1 || a.rounds < 1 || a.ms.empty()) {
    Die("usage: matmul_probe --model PREFIX [--m 1,128,512] [--threads 2] [--rounds 20] "
        "[--gap-ms 300] [--buft auto|CPU|CPU_REPACK|AMX] [--cpu-backend native|haswell|PATH] "
        "[--engines both|ort,ggml,op] [--ggml-threads pool|caller] [--ort-config KEY=VALUE]... "
        "[--op-library SO --op-model PREFIX_op.onnx]");
  }
  if (a.engines == "both") a.engines = a.op_model.empty() ? "ort,ggml" : "ort,ggml,op";
  {
    std::stringstream ss(a.engines);
    for (std::string e; std::getline(ss, e, ',');) {
      if (e != "ort" && e != "ggml" && e != "op") Die("--engines: unknown engine '" + e + "'");
    }
  }
  if (HasEngine(a, "op") && (a.op_library.empty() || a.op_model.empty())) {
    Die("engine op needs --op-library and --op-model");
  }
  if (a.ggml_threads != "pool" && a.ggml_threads != "caller") {
    Die("--ggml-threads must be pool or caller");
  }
  for (int m : a.ms) {
    if (m < 1) Die("--m values must be positive");
  }
  return a;
}

bool HasEngine(const Args& a, const std::string& e) {
  std::stringstream ss(a.engines);
  for (std::string x; std::getline(ss, x, ',');) {
    if (x == e) return true;
  }
  return false;
}

// K and N from PREFIX.json ({"k": .., "n": .., "block_size": ..}).
long JsonInt(const std::string& text, const std::string& key, long fallback = -1) {
  const size_t p = text.find("\"" + key + "\":");
  if (p == std::string::npos && fallback >= 0) return fallback;
  if (p == std::string::npos) Die("no " + key + " in the model's .json");
  return std::strtol(text.c_str() + p + key.size() + 3, nullptr, 10);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Die("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// ggml's CPU backend, loaded the way llama.cpp loads it, with the weights in one buffer.
struct Ggml {
  ggml_backend_dev_t dev = nullptr;
  ggml_backend_t backend = nullptr;
  ggml_backend_reg_t reg = nullptr;
  std::string backend_lib;  // which libggml-cpu-<isa>.so
  std::string features;     // the backend's feature list, "AVX2=1 AVX512=1 ..."
  ggml_context* wctx = nullptr;
  std::vector<ggml_tensor*> w;  // the chain's matrices, in order (one unless --layers)
  ggml_backend_buffer_t wbuf = nullptr;
  std::string buft_name;
  ggml_threadpool_t pool = nullptr;  // SetThreads' persistent pool; freed by FreePool

  void Init(const Args& a) {
    if (a.cpu_backend == "native") {
      ggml_backend_load_all_from_path(EBB_LLAMACPP_BIN_DIR);
    } else {
      const std::string path =
          a.cpu_backend.find('/') == std::string::npos
              ? std::string(EBB_LLAMACPP_BIN_DIR) + "/libggml-cpu-" + a.cpu_backend + ".so"
              : a.cpu_backend;
      if (!ggml_backend_load(path.c_str())) Die("could not load " + path);
      backend_lib = path;
    }
    dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) Die("no ggml CPU device");
    reg = ggml_backend_dev_backend_reg(dev);
    backend = ggml_backend_dev_init(dev, nullptr);
    if (auto f = reinterpret_cast<ggml_backend_get_features_t>(
            ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"))) {
      for (ggml_backend_feature* x = f(reg); x && x->name; ++x) {
        features += std::string(features.empty() ? "" : " ") + x->name + "=" + x->value;
      }
    }
    if (backend_lib.empty()) {
      // Which shared object holds the device's code: dladdr on one of its functions.
      Dl_info info{};
      if (dladdr(ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"), &info) &&
          info.dli_fname) {
        backend_lib = info.dli_fname;
      }
    }
  }

  void SetThreads(int n) {
    auto set_n = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    set_n(backend, n);
    using NewPool = ggml_threadpool_t (*)(ggml_threadpool_params*);
    using SetPool = void (*)(ggml_backend_t, ggml_threadpool_t);
    auto new_pool =
        reinterpret_cast<NewPool>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
    auto set_pool = reinterpret_cast<SetPool>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool"));
    if (new_pool && set_pool) {
      ggml_threadpool_params p = ggml_threadpool_params_default(n);
      pool = new_pool(&p);
      set_pool(backend, pool);
    }
  }

  void FreePool() {
    using FreeFn = void (*)(ggml_threadpool_t);
    auto free_pool =
        reinterpret_cast<FreeFn>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free"));
    if (pool && free_pool) free_pool(pool);
    pool = nullptr;
  }

  // Puts `layers` matrices (ne = [K, n], Q4_0, one after the other in `q4`) in the first buffer
  // type that supports W x A: the chain's matrices, or one matrix cut into `layers` row blocks
  // (Q4_0 rows are contiguous, so equal byte slices of `q4` are equal row blocks).
  void LoadWeights(const Args& a, long k, long n, long layers, const std::string& q4) {
    const std::vector<ggml_backend_buffer_type_t> cands = ggml_weights::Candidates(reg, dev);
    std::string seen;
    for (ggml_backend_buffer_type_t bt : cands) {
      const std::string name = ggml_backend_buft_name(bt);
      seen += (seen.empty() ? "" : ", ") + name;
      if (a.buft != "auto" && name != a.buft) continue;
      ggml_init_params ip = {ggml_tensor_overhead() * static_cast<size_t>(layers + 4), nullptr,
                             true};
      ggml_context* ctx = ggml_init(ip);
      std::vector<ggml_tensor*> ts;
      for (long l = 0; l < layers; ++l) ts.push_back(ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, k, n));
      ggml_tensor* t = ts[0];
      ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, bt);
      if (!buf) {
        ggml_free(ctx);
        continue;
      }
      if (!ggml_weights::MultipliesFrom(dev, t, k)) {
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
        continue;
      }
      ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
      const size_t per = q4.size() / static_cast<size_t>(layers);
      for (long l = 0; l < layers; ++l) {  // repacks for CPU_REPACK / AMX
        ggml_backend_tensor_set(ts[static_cast<size_t>(l)], q4.data() + per * l, 0, per);
      }
      wctx = ctx;
      w = ts;
      wbuf = buf;
      buft_name = name;
      return;
    }
    Die("no ggml buffer type '" + a.buft + "' supports this multiply (have: " + seen + ")");
  }

  struct Graph {
    ggml_context* ctx = nullptr;
    ggml_cgraph* gf = nullptr;
    ggml_tensor* x = nullptr;
    ggml_tensor* y = nullptr;
    ggml_gallocr_t alloc = nullptr;
  };

  // The graph of one part (--ggml-threads caller): x [K, M] times w[part] only, computed by
  // parts_backend[part] (one CPU backend per calling thread, each with 1 thread).
  Graph BuildPart(long k, long m, size_t part) {
    Graph g;
    ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    g.ctx = ggml_init(ip);
    g.x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, k, m);
    ggml_set_input(g.x);
    ggml_set_output(g.x);
    g.y = ggml_mul_mat(g.ctx, w[part], g.x);
    ggml_set_output(g.y);
    g.gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.gf, g.y);
    g.alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(parts_backend[part]));
    if (!ggml_gallocr_alloc_graph(g.alloc, g.gf)) Die("ggml_gallocr_alloc_graph failed");
    return g;
  }

  std::vector<ggml_backend_t> parts_backend;  // --ggml-threads caller: one per thread

  Graph Build(long k, long m) {
    Graph g;
    ggml_init_params ip = {ggml_tensor_overhead() * (w.size() + 8) + ggml_graph_overhead(), nullptr,
                           true};
    g.ctx = ggml_init(ip);
    g.x = ggml_new_tensor_2d(g.ctx, GGML_TYPE_F32, k, m);
    // An input the allocator must keep: it frees a tensor after its last use, and a chain's later
    // results would otherwise overwrite A between calls (set_input alone does not prevent it).
    ggml_set_input(g.x);
    ggml_set_output(g.x);
    g.y = g.x;
    for (ggml_tensor* wl : w) g.y = ggml_mul_mat(g.ctx, wl, g.y);
    ggml_set_output(g.y);
    g.gf = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.gf, g.y);
    g.alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!ggml_gallocr_alloc_graph(g.alloc, g.gf)) Die("ggml_gallocr_alloc_graph failed");
    return g;
  }
};

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Runs task(t) for t in [0, n) per Run: t = 0 on the caller, the others on persistent workers
// that spin between calls (like ORT's intra-op pool with allow_spinning=1). n = 1: no workers.
class CallerPool {
 public:
  explicit CallerPool(size_t n) : n_(n) {
    for (size_t t = 1; t < n_; ++t) {
      workers_.emplace_back([this, t] {
        uint64_t seen = 0;
        for (;;) {
          uint64_t g;
          while ((g = generation_.load(std::memory_order_acquire)) == seen) {
            CpuRelax();
          }
          seen = g;
          if (stop_.load(std::memory_order_acquire)) return;
          (*task_)(t);
          done_.fetch_add(1, std::memory_order_acq_rel);
        }
      });
    }
  }
  CallerPool(const CallerPool&) = delete;
  CallerPool& operator=(const CallerPool&) = delete;
  ~CallerPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    for (auto& w : workers_) w.join();
  }

  void Run(const std::function<void(size_t)>& task) {
    task_ = &task;
    done_.store(0, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    task(0);
    while (done_.load(std::memory_order_acquire) != n_ - 1) CpuRelax();
  }

 private:
  size_t n_;
  const std::function<void(size_t)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> done_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const std::string meta = ReadFile(a.model + ".json");
  const long k = JsonInt(meta, "k"), n = JsonInt(meta, "n"), block = JsonInt(meta, "block_size");
  const long int4_bytes = JsonInt(meta, "int4_bytes"), q4_bytes = JsonInt(meta, "q4_0_bytes");
  const long layers = JsonInt(meta, "layers", 1);  // a chain of K x K matrices (matmul_model.py)
  const std::string q4 = ReadFile(a.model + ".q4_0");
  if (static_cast<long>(q4.size()) != q4_bytes) Die("the .q4_0 file does not match its .json");

  // Only the engines measured exist in the process: an idle ggml pool's workers poll and an idle
  // ORT session's workers spin, and either would take a core from the other engine's turn.
  const bool do_ort = HasEngine(a, "ort"), do_gg = HasEngine(a, "ggml"), do_op = HasEngine(a, "op");
  // --ggml-threads caller: what an ORT custom op would do from KernelContext_ParallelFor. The
  // matrix is cut into --threads row blocks at load; each call runs block t on thread t (thread
  // 0 = the caller, the others persistent and spinning between calls, as ORT's pool does), each
  // block a single-threaded ggml call on its own CPU backend. ggml's own pool is not created.
  const bool caller = a.ggml_threads == "caller";
  const size_t parts = caller ? static_cast<size_t>(a.threads) : 1;
  if (caller && (layers != 1 || n % a.threads != 0)) {
    Die("--ggml-threads caller needs one matrix (no --layers) whose N divides by --threads");
  }
  Ggml gg;
  if (do_gg) {
    gg.Init(a);
    if (caller) {
      auto set_n = reinterpret_cast<ggml_backend_set_n_threads_t>(
          ggml_backend_reg_get_proc_address(gg.reg, "ggml_backend_set_n_threads"));
      for (size_t t = 0; t < parts; ++t) {
        gg.parts_backend.push_back(ggml_backend_dev_init(gg.dev, nullptr));
        set_n(gg.parts_backend.back(), 1);
      }
      gg.LoadWeights(a, k, n / a.threads, a.threads, q4);
    } else {
      gg.SetThreads(a.threads);
      gg.LoadWeights(a, k, n, layers, q4);
    }
  }
  // Created for ggml's timed block only (below): its workers spin between calls, and ORT's block
  // must not run against them.
  std::optional<CallerPool> pool;

  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "matmul_probe");
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(a.threads);
  so.SetInterOpNumThreads(1);
  for (const auto& [key, value] : a.ort_config) so.AddConfigEntry(key.c_str(), value.c_str());
  const std::string onnx = a.model + ".onnx";
  std::optional<Ort::Session> session;
  if (do_ort) session.emplace(env, onnx.c_str(), so);
  // The op engine: a second session, the same options plus the custom op library.
  std::optional<Ort::Session> op_session;
  if (do_op) {
    Ort::SessionOptions so_op = so.Clone();
    so_op.RegisterCustomOpsLibrary(a.op_library.c_str());
    op_session.emplace(env, a.op_model.c_str(), so_op);
  }
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const char* in_names[] = {"A"};
  const char* out_names[] = {"Y"};

  std::printf(
      "{\"kind\": \"setup\", \"k\": %ld, \"n\": %ld, \"block_size\": %ld, \"layers\": %ld, "
      "\"threads\": %d, "
      "\"ort_version\": \"%s\", \"ggml_backend\": \"%s\", \"ggml_features\": \"%s\", "
      "\"ggml_buft\": \"%s\"}\n",
      k, n, block, layers, a.threads, Ort::GetVersionString().c_str(), gg.backend_lib.c_str(),
      gg.features.c_str(), gg.buft_name.c_str());
  std::fflush(stdout);

  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int m : a.ms) {
    std::vector<float> x(static_cast<size_t>(m) * k), y_ort(static_cast<size_t>(m) * n),
        y_gg(static_cast<size_t>(m) * n), y_op(static_cast<size_t>(m) * n);
    for (float& v : x) v = dist(rng);
    const int64_t xs[] = {m, k}, ys[] = {m, n};
    Ort::Value xin = Ort::Value::CreateTensor<float>(mem, x.data(), x.size(), xs, 2);
    Ort::Value yout = Ort::Value::CreateTensor<float>(mem, y_ort.data(), y_ort.size(), ys, 2);
    Ort::Value yop = Ort::Value::CreateTensor<float>(mem, y_op.data(), y_op.size(), ys, 2);
    Ggml::Graph g;
    std::vector<Ggml::Graph> gp(caller ? parts : 0);
    if (do_gg && !caller) {
      g = gg.Build(k, m);
      ggml_backend_tensor_set(g.x, x.data(), 0, x.size() * sizeof(float));
    }
    for (size_t t = 0; t < gp.size() && do_gg; ++t) {
      gp[t] = gg.BuildPart(k, m, t);
      ggml_backend_tensor_set(gp[t].x, x.data(), 0, x.size() * sizeof(float));
    }

    auto run_ort = [&] { session->Run(Ort::RunOptions{}, in_names, &xin, 1, out_names, &yout, 1); };
    auto run_op = [&] {
      op_session->Run(Ort::RunOptions{}, in_names, &xin, 1, out_names, &yop, 1);
    };
    auto run_gg = [&] {
      if (caller) {
        pool->Run([&](size_t t) {
          if (ggml_backend_graph_compute(gg.parts_backend[t], gp[t].gf) != GGML_STATUS_SUCCESS) {
            Die("ggml_backend_graph_compute failed");
          }
        });
      } else if (ggml_backend_graph_compute(gg.backend, g.gf) != GGML_STATUS_SUCCESS) {
        Die("ggml_backend_graph_compute failed");
      }
    };
    // One engine at a time: all of ORT's rounds, a pause, then all of ggml's. Interleaving them
    // call by call measures each one against the other's spinning workers (ORT's pool spins
    // after a Run, ggml's polls for the next graph), which on 2 cores costs either of them up to
    // 2-15x; the pause lets the finished engine's workers park. Noise across the two blocks is
    // handled by rerunning the process (bench/llamacpp/matmul_vs_ggml.py alternates them).
    std::vector<double> t_ort, t_gg, t_op;
    const auto timed = [&](auto run, std::vector<double>& t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(a.gap_ms));
      for (int i = 0; i < 3; ++i) run();  // warm-up: caches, first-call allocations
      for (int r = 0; r < a.rounds; ++r) {
        const auto t0 = Clock::now();
        run();
        t.push_back(Seconds(t0, Clock::now()));
      }
    };
    if (do_ort) timed(run_ort, t_ort);
    if (do_op) timed(run_op, t_op);
    if (do_gg) {
      if (caller) pool.emplace(parts);
      timed(run_gg, t_gg);
      pool.reset();
    }
    if (!do_ort) t_ort = {0};
    if (!do_gg) t_gg = {0};
    if (!do_op) t_op = {0};
    if (do_gg && !caller) {
      ggml_backend_tensor_get(g.y, y_gg.data(), 0, y_gg.size() * sizeof(float));
    }
    const size_t rows = static_cast<size_t>(n) / std::max<size_t>(parts, 1);
    for (size_t t = 0; t < gp.size() && do_gg; ++t) {  // gather the row blocks: y[m][t*rows + i]
      std::vector<float> part(rows * static_cast<size_t>(m));
      ggml_backend_tensor_get(gp[t].y, part.data(), 0, part.size() * sizeof(float));
      for (size_t r = 0; r < static_cast<size_t>(m); ++r) {
        std::copy(part.begin() + static_cast<long>(r * rows),
                  part.begin() + static_cast<long>((r + 1) * rows),
                  y_gg.begin() + static_cast<long>(r * n + t * rows));
      }
    }
    // Largest |ref - other| relative to the largest |ref|; 0 when either was not measured.
    const auto rel_diff = [](const std::vector<float>& ref, const std::vector<float>& other) {
      double max_abs = 0, max_diff = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        max_abs = std::max(max_abs, static_cast<double>(std::fabs(ref[i])));
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(ref[i] - other[i])));
      }
      return max_abs > 0 ? max_diff / max_abs : 0.0;
    };
    const double diff_gg = do_ort && do_gg ? rel_diff(y_ort, y_gg) : 0.0;
    const double diff_op = do_ort && do_op ? rel_diff(y_ort, y_op) : 0.0;
    const double diff_op_gg = do_gg && do_op ? rel_diff(y_gg, y_op) : 0.0;
    const double flops = 2.0 * m * n * k * layers;
    const double mo = Median(t_ort), mg = Median(t_gg), mop = Median(t_op);
    auto per_s = [](double amount, double t) {
      return t > 0 ? amount / t : 0.0;
    };  // 0: not measured
    std::printf(
        "{\"kind\": \"result\", \"m\": %d, \"ort_median_s\": %.7f, \"ort_best_s\": %.7f, "
        "\"ggml_median_s\": %.7f, \"ggml_best_s\": %.7f, \"ort_gb_s\": %.2f, \"ggml_gb_s\": %.2f, "
        "\"ort_gflop_s\": %.1f, \"ggml_gflop_s\": %.1f, \"ort_over_ggml_time\": %.3f, "
        "\"max_diff_rel\": %.2e, \"op_median_s\": %.7f, \"op_best_s\": %.7f, "
        "\"op_gflop_s\": %.1f, \"ort_over_op_time\": %.3f, \"max_diff_rel_op\": %.2e, "
        "\"max_diff_rel_op_ggml\": %.2e}\n",
        m, mo, *std::min_element(t_ort.begin(), t_ort.end()), mg,
        *std::min_element(t_gg.begin(), t_gg.end()), per_s(int4_bytes, mo) / 1e9,
        per_s(q4_bytes, mg) / 1e9, per_s(flops, mo) / 1e9, per_s(flops, mg) / 1e9, per_s(mo, mg),
        diff_gg, mop, *std::min_element(t_op.begin(), t_op.end()), per_s(flops, mop) / 1e9,
        per_s(mo, mop), diff_op, diff_op_gg);
    std::fflush(stdout);
    if (do_gg && !caller) {
      ggml_gallocr_free(g.alloc);
      ggml_free(g.ctx);
    }
    for (auto& part : gp) {
      ggml_gallocr_free(part.alloc);
      ggml_free(part.ctx);
    }
  }
  for (ggml_backend_t b : gg.parts_backend) ggml_backend_free(b);
  if (do_gg) {
    ggml_backend_free(gg.backend);  // before its pool: the backend refers to it
    gg.FreePool();
    ggml_backend_buffer_free(gg.wbuf);
    ggml_free(gg.wctx);
  }
  return 0;
}
