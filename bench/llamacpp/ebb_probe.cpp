// bench/llamacpp/ebb_probe.cpp — one greedy generation through ebb's public C++ API, measured
// the way llamacpp_probe.cpp measures llama.cpp (same command line, same prompt, same JSON; see
// probe_util.h for what each time covers). Used by bench/vs_llamacpp.py.
//
//   ebb_probe --model MODEL_DIR --threads 2 --prompt-tokens 512 --gen-tokens 64
//             [--warm-steps 8] [--warmup]
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
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  const auto t_main = probe::Clock::now();
  probe::Result r;
  r.engine = "ebb";
  r.args = probe::ParseArgs(argc, argv, /*llama=*/false);
  try {
    r.extra_json = "\"ort_version\": " + probe::JsonString(ebb::OrtVersion()) +
                   ", \"ebb_version\": " + probe::JsonString(ebb::Version()) +
                   ", \"cpu_kernels\": " + probe::JsonString(ebb::CpuKernels()) + ", ";
    ebb::ModelOptions mo;
    mo.session_options["intra_op_num_threads"] = std::to_string(r.args.threads);
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
