// Decode and prefill benchmarks, side by side in one process:
//   BareRun   the least an ORT program can do per token: a KV buffer bound once (GQA shares
//             past/present), one input_ids and mask tensor per step, Session::Run. The floor.
//   Ebb       ebb::Generator::GenerateNextToken (sampling, bookkeeping, KV binding included).
//   NaiveOrt  the usual hand-written loop: ORT allocates the presents each step (in its arena)
//             and they are fed back as the next past.
// Model: $EBB_BENCH_MODEL (default: the tiny llama test model). Per-token time is the
// benchmark's time; peak RSS of the process is reported as a counter, so run one benchmark per
// process (--benchmark_filter) to compare peaks. docs/benchmarks.md has the commands.
#include <benchmark/benchmark.h>
#include <onnxruntime_cxx_api.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/process_memory.h"
#include "ebb/runtime.h"

namespace {

constexpr int kPromptTokens = 128;

std::string ModelDir() {
  const char* m = std::getenv("EBB_BENCH_MODEL");
  return m != nullptr ? m : EBB_BINARY_DIR "/test-models/llama-tiny-fp32";
}

int MaxLength() {
  const char* m = std::getenv("EBB_BENCH_MAX_LENGTH");
  return m != nullptr ? std::atoi(m) : 512;
}

double PeakRssMiB() {
  const int64_t peak = ebb::ReadProcessMemory().peak_rss_bytes;
  return peak > 0 ? static_cast<double>(peak) / (1024.0 * 1024.0) : 0;
}

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = (i * 37 + 11) % vocab;
  return p;
}

std::shared_ptr<ebb::Model> SharedModel() {
  static std::shared_ptr<ebb::Model> model = ebb::LoadModel(ModelDir());
  return model;
}

// ---- ebb --------------------------------------------------------------------------------------

void BM_EbbDecode(benchmark::State& state) {
  auto model = SharedModel();
  const auto prompt = Prompt(kPromptTokens, model->info().vocab_size);
  ebb::GeneratorParams p;
  p.max_length = MaxLength();
  std::unique_ptr<ebb::Generator> g;
  for (auto _ : state) {
    if (!g || g->done()) {
      state.PauseTiming();
      g.reset();
      g = std::make_unique<ebb::Generator>(model, p);
      g->AppendTokens(prompt);
      state.ResumeTiming();
    }
    g->GenerateNextToken();
  }
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

void BM_EbbPrefill(benchmark::State& state) {
  auto model = SharedModel();
  const auto prompt = Prompt(static_cast<int>(state.range(0)), model->info().vocab_size);
  ebb::GeneratorParams p;
  p.max_length = MaxLength();
  for (auto _ : state) {
    ebb::Generator g(model, p);
    g.AppendTokens(prompt);
    g.GenerateNextToken();  // time to first token
  }
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

// ---- plain ORT loops --------------------------------------------------------------------------

// Graph interface of a builder-style GQA model (the synthesized llama/phi3/qwen2 folders).
struct OrtLoop {
  // As ebb does (src/ort/ort_env.h): ORT's telemetry off before the first env.
  int telemetry_off = setenv("ORT_DISABLE_TELEMETRY", "1", 1);
  Ort::Env env{ORT_LOGGING_LEVEL_WARNING, "bench"};
  std::unique_ptr<Ort::Session> session;
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  int layers = 0, kv_heads = 0, head = 0, vocab = 0;
  std::vector<std::string> in_names_s, out_names_s;
  std::vector<const char*> in_names, out_names;

  OrtLoop() {
    std::ifstream f(ModelDir() + "/genai_config.json");
    std::string cfg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto num = [&](const std::string& key) {
      const auto pos = cfg.find("\"" + key + "\"");
      return std::atoi(cfg.c_str() + cfg.find(':', pos) + 1);
    };
    layers = num("num_hidden_layers");
    kv_heads = num("num_key_value_heads");
    head = num("head_size");
    vocab = num("vocab_size");
    Ort::SessionOptions so;
    session = std::make_unique<Ort::Session>(env, (ModelDir() + "/model.onnx").c_str(), so);
    in_names_s = {"input_ids", "attention_mask"};
    out_names_s = {"logits"};
    for (int l = 0; l < layers; ++l) {
      for (const char* kv : {"key", "value"}) {
        in_names_s.push_back("past_key_values." + std::to_string(l) + "." + kv);
        out_names_s.push_back("present." + std::to_string(l) + "." + kv);
      }
    }
    for (auto& s : in_names_s) in_names.push_back(s.c_str());
    for (auto& s : out_names_s) out_names.push_back(s.c_str());
  }
};

int64_t Argmax(const float* p, int n) {
  int64_t best = 0;
  for (int i = 1; i < n; ++i) best = p[i] > p[best] ? i : best;
  return best;
}

// The floor: one shared KV buffer of max_length bound as both past and present.
void BM_BareRunDecode(benchmark::State& state) {
  OrtLoop o;
  const int64_t L = MaxLength();
  const size_t per_tensor = static_cast<size_t>(o.kv_heads) * L * o.head;
  std::vector<float> kv(per_tensor * 2 * o.layers);
  std::vector<float> logits(o.vocab);
  std::vector<int64_t> ids(1), mask;
  const std::vector<int64_t> kv_dims{1, o.kv_heads, L, o.head};
  std::vector<Ort::Value> kv_in, kv_out;
  for (int t = 0; t < 2 * o.layers; ++t) {
    kv_in.push_back(Ort::Value::CreateTensor<float>(o.mem, kv.data() + t * per_tensor, per_tensor,
                                                    kv_dims.data(), 4));
    kv_out.push_back(Ort::Value::CreateTensor<float>(o.mem, kv.data() + t * per_tensor, per_tensor,
                                                     kv_dims.data(), 4));
  }
  int64_t len = 0;
  auto step = [&](const std::vector<int64_t>& tokens) {
    const int64_t S = static_cast<int64_t>(tokens.size());
    mask.assign(len + S, 1);
    ids = tokens;
    std::vector<int64_t> id_dims{1, S}, mask_dims{1, len + S}, logit_dims{1, S, o.vocab};
    if (static_cast<int64_t>(logits.size()) < S * o.vocab) logits.resize(S * o.vocab);
    std::vector<Ort::Value> in, out;
    in.push_back(
        Ort::Value::CreateTensor<int64_t>(o.mem, ids.data(), ids.size(), id_dims.data(), 2));
    in.push_back(
        Ort::Value::CreateTensor<int64_t>(o.mem, mask.data(), mask.size(), mask_dims.data(), 2));
    for (auto& v : kv_in)
      in.push_back(Ort::Value::CreateTensor<float>(o.mem, v.GetTensorMutableData<float>(),
                                                   per_tensor, kv_dims.data(), 4));
    out.push_back(
        Ort::Value::CreateTensor<float>(o.mem, logits.data(), S * o.vocab, logit_dims.data(), 3));
    for (auto& v : kv_out)
      out.push_back(Ort::Value::CreateTensor<float>(o.mem, v.GetTensorMutableData<float>(),
                                                    per_tensor, kv_dims.data(), 4));
    o.session->Run(Ort::RunOptions{nullptr}, o.in_names.data(), in.data(), in.size(),
                   o.out_names.data(), out.data(), out.size());
    len += S;
    return Argmax(logits.data() + (S - 1) * o.vocab, o.vocab);
  };
  std::vector<int64_t> prompt;
  for (int32_t t : Prompt(kPromptTokens, o.vocab)) prompt.push_back(t);
  int64_t next = -1;
  for (auto _ : state) {
    if (next < 0 || len + 1 >= L) {
      state.PauseTiming();
      len = 0;
      next = step(prompt);
      state.ResumeTiming();
    }
    next = step({next});
  }
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

// The usual loop: ORT allocates each step's presents; they become the next past.
void BM_NaiveOrtDecode(benchmark::State& state) {
  OrtLoop o;
  const int64_t L = MaxLength();
  std::vector<int64_t> ids(1), mask;
  std::vector<Ort::Value> past;
  int64_t len = 0;
  Ort::AllocatorWithDefaultOptions alloc;
  auto step = [&](const std::vector<int64_t>& tokens) {
    const int64_t S = static_cast<int64_t>(tokens.size());
    mask.assign(len + S, 1);
    ids = tokens;
    std::vector<int64_t> id_dims{1, S}, mask_dims{1, len + S};
    std::vector<Ort::Value> in;
    in.push_back(
        Ort::Value::CreateTensor<int64_t>(o.mem, ids.data(), ids.size(), id_dims.data(), 2));
    in.push_back(
        Ort::Value::CreateTensor<int64_t>(o.mem, mask.data(), mask.size(), mask_dims.data(), 2));
    if (past.empty()) {
      const std::vector<int64_t> dims{1, o.kv_heads, 0, o.head};
      for (int t = 0; t < 2 * o.layers; ++t) {
        past.push_back(Ort::Value::CreateTensor<float>(alloc, dims.data(), dims.size()));
      }
    }
    for (auto& v : past) in.push_back(std::move(v));
    auto out = o.session->Run(Ort::RunOptions{nullptr}, o.in_names.data(), in.data(), in.size(),
                              o.out_names.data(), o.out_names.size());
    past.clear();
    for (size_t i = 1; i < out.size(); ++i) past.push_back(std::move(out[i]));
    len += S;
    return Argmax(out[0].GetTensorData<float>() + (S - 1) * o.vocab, o.vocab);
  };
  std::vector<int64_t> prompt;
  for (int32_t t : Prompt(kPromptTokens, o.vocab)) prompt.push_back(t);
  int64_t next = -1;
  for (auto _ : state) {
    if (next < 0 || len + 1 >= L) {
      state.PauseTiming();
      len = 0;
      past.clear();
      next = step(prompt);
      state.ResumeTiming();
    }
    next = step({next});
  }
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

}  // namespace

BENCHMARK(BM_BareRunDecode)->Unit(benchmark::kMicrosecond)->MinTime(3.0);
BENCHMARK(BM_EbbDecode)->Unit(benchmark::kMicrosecond)->MinTime(3.0);
BENCHMARK(BM_NaiveOrtDecode)->Unit(benchmark::kMicrosecond)->MinTime(3.0);
BENCHMARK(BM_EbbPrefill)->Arg(kPromptTokens)->Unit(benchmark::kMillisecond)->MinTime(2.0);

BENCHMARK_MAIN();
