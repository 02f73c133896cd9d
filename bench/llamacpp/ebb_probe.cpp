// bench/llamacpp/ebb_probe.cpp — one greedy generation through ebb's public C++ API, measured
// the way llamacpp_probe.cpp measures llama.cpp (same command line, same prompt, same JSON; see
// probe_util.h for what each time covers). Used by bench/vs_llamacpp.py.
//
//   ebb_probe --model MODEL_DIR --threads 2 --prompt-tokens 512 --gen-tokens 64
//             [--warm-steps 8] [--warmup] [--option K=V]...   (ebb model options, after its own)
//
// Threads: session option intra_op_num_threads (ORT's pool; inter-op 1). Greedy (do_sample
// false), max_length = prompt + gen, ebb's defaults otherwise (static KV, prefill_chunk_size
// 256, prefill_logits=last). The prompt runs as one AppendTokens (ebb's prefill: one ORT Run per
// 256-token chunk; the LM head runs only at the last position, as llama.cpp's does). A
// generation that hits EOS stops early (the synthesized models practically never pick it).
// --warmup: before the timed Generator, a separate one runs a short generation (probe_util.h's
// kWarmup*; other prompt ids) and is destroyed, so only the model and ORT's session state carry
// over. The JSON adds "ort_version" (the ONNX Runtime loaded at run time) and "cpu_kernels"
// (ebb::CpuKernels(): the MLAS kernel family this CPU's flags select) and "model_kernels"
// (ModelInfo::kernels: what this model's matmuls and attention run on, a custom op included).
//
// --streams N (probe_util.h): N threads, each with its own Generator and prompt, started together
// after the load (and the --warmup generation); --stream-mode batched (default) loads the model
// with decode_batch.max_rows=N so that their decode steps run as one batched Run, threads with
// max_rows=1 (N independent Runs). Prints the streams JSON (PrintStreamsJson).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/version.h"
#include "probe_util.h"

namespace {

// The --warmup generation: its own Generator, destroyed on return.
void Warmup(const std::shared_ptr<ebb::Model>& model, const probe::Args& a) {
  const int n_prompt = std::min(probe::kWarmupPromptTokens, a.prompt_tokens);
  const int n_gen = std::min(probe::kWarmupGenTokens, a.gen_tokens);
  ebb::GeneratorParams gp;
  gp.max_length = n_prompt + n_gen;
  gp.do_sample = false;
  ebb::Generator g(model, gp);
  g.AppendTokens(probe::Prompt(n_prompt, model->info().vocab_size, /*salt=*/1));
  for (int i = 0; i < n_gen && !g.done(); ++i) g.GenerateNextToken();
}

// Concurrent mode: N generators on N threads, released together; returns the process exit code.
int RunStreams(const probe::Args& args) {
  probe::StreamsResult r;
  r.engine = "ebb";
  r.args = args;
  const int n = args.streams;
  r.tokens.resize(static_cast<size_t>(n));
  r.times.resize(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  try {
    ebb::ModelOptions mo;
    mo.session_options["intra_op_num_threads"] = std::to_string(args.threads);
    mo.Set("decode_batch.max_rows", args.stream_mode == "batched" ? std::to_string(n) : "1");
    for (const auto& [k, v] : args.ebb_options) mo.Set(k, v);
    const auto t0 = probe::Clock::now();
    std::shared_ptr<ebb::Model> model = ebb::LoadModel(args.model, mo);
    r.load_s = probe::Seconds(t0, probe::Clock::now());
    r.after_load = probe::Memory::Now();
    if (args.warmup) Warmup(model, args);
    const int vocab = model->info().vocab_size;
    std::latch ready(n + 1);
    probe::Clock::time_point start;
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        const auto prompt = probe::Prompt(args.prompt_tokens, vocab, probe::StreamSalt(i));
        ebb::GeneratorParams gp;
        gp.max_length = args.prompt_tokens + args.gen_tokens;
        gp.do_sample = false;
        auto& toks = r.tokens[static_cast<size_t>(i)];
        auto& times = r.times[static_cast<size_t>(i)];
        bool arrived = false;
        try {
          ebb::Generator g(model, gp);
          arrived = true;
          ready.arrive_and_wait();  // every generator exists; `start` is set before the release
          g.AppendTokens(prompt);
          while (static_cast<int>(toks.size()) < args.gen_tokens && !g.done()) {
            g.GenerateNextToken();
            toks.push_back(g.GetNextTokens()[0]);
            times.push_back(probe::Seconds(start, probe::Clock::now()));
          }
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(i)] = e.what();
          if (!arrived) ready.count_down();  // a generator that could not start releases the rest
        }
      });
    }
    start = probe::Clock::now();
    ready.arrive_and_wait();
    for (auto& t : threads) t.join();
    r.at_end = probe::Memory::Now();
    r.extra_json = "\"stream_mode\": " + probe::JsonString(args.stream_mode) +
                   ", \"ort_version\": " + probe::JsonString(ebb::OrtVersion()) +
                   ", \"cpu_kernels\": " + probe::JsonString(ebb::CpuKernels()) +
                   ", \"model_kernels\": " + probe::JsonString(model->info().kernels) + ", ";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ebb_probe: %s\n", e.what());
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    if (!errors[static_cast<size_t>(i)].empty()) {
      std::fprintf(stderr, "ebb_probe: stream %d: %s\n", i, errors[static_cast<size_t>(i)].c_str());
      return 1;
    }
  }
  probe::PrintStreamsJson(r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t_main = probe::Clock::now();
  probe::Result r;
  r.engine = "ebb";
  r.args = probe::ParseArgs(argc, argv, /*llama=*/false);
  if (r.args.streams > 0) return RunStreams(r.args);
  try {
    r.extra_json = "\"ort_version\": " + probe::JsonString(ebb::OrtVersion()) +
                   ", \"ebb_version\": " + probe::JsonString(ebb::Version()) +
                   ", \"cpu_kernels\": " + probe::JsonString(ebb::CpuKernels()) + ", ";
    ebb::ModelOptions mo;
    mo.session_options["intra_op_num_threads"] = std::to_string(r.args.threads);
    for (const auto& [k, v] : r.args.ebb_options) mo.Set(k, v);
    const auto t0 = probe::Clock::now();
    std::shared_ptr<ebb::Model> model = ebb::LoadModel(r.args.model, mo);
    auto t1 = probe::Clock::now();
    r.load_s = probe::Seconds(t0, t1);
    r.after_load = probe::Memory::Now();
    r.extra_json += "\"model_kernels\": " + probe::JsonString(model->info().kernels) + ", ";
    if (r.args.warmup) {
      Warmup(model, r.args);
      const auto tw = probe::Clock::now();
      r.warmup_s = probe::Seconds(t1, tw);
      t1 = tw;
    }

    ebb::GeneratorParams gp;
    gp.max_length = r.args.prompt_tokens + r.args.gen_tokens;
    gp.do_sample = false;
    ebb::Generator g(model, gp);
    const auto t2 = probe::Clock::now();
    r.context_s = probe::Seconds(t1, t2);

    const auto prompt = probe::Prompt(r.args.prompt_tokens, model->info().vocab_size);
    g.AppendTokens(prompt);  // the prompt's forward pass
    const auto t3 = probe::Clock::now();
    r.prefill_s = probe::Seconds(t2, t3);
    g.GenerateNextToken();  // samples from the prompt's logits: no forward pass
    const int32_t first = g.GetNextTokens()[0];
    const auto t4 = probe::Clock::now();
    r.AddToken(first, t4, t4);
    probe::AnnounceFirstToken(first);
    r.first_token_s = probe::Seconds(t_main, t4);

    while (static_cast<int>(r.tokens.size()) < r.args.gen_tokens && !g.done()) {
      g.GenerateNextToken();  // one forward pass over the last token, then sampling
      const int32_t id = g.GetNextTokens()[0];
      r.AddToken(id, t4, probe::Clock::now());
    }
    r.decode_s = r.token_times.back();
    r.at_end = probe::Memory::Now();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ebb_probe: %s\n", e.what());
    return 1;
  }
  probe::PrintJson(r);
  return 0;
}
