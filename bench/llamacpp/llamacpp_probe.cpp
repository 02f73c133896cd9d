// bench/llamacpp/llamacpp_probe.cpp — one greedy generation through llama.cpp's C API (the
// prebuilt libraries of the npm package @node-llama-cpp/linux-x64, fetched by
// scripts/bench_bootstrap), measured the way ebb_probe.cpp measures ebb (same command line, same
// prompt, same JSON; see probe_util.h for what each time covers). Used by bench/vs_llamacpp.py.
//
//   llamacpp_probe --model MODEL.gguf --threads 2 --prompt-tokens 512 --gen-tokens 64
//
// llama.cpp's defaults except: n_ctx = prompt + gen, n_batch = n_ubatch = max(prompt, 512) (the
// prompt is one llama_decode call and one compute batch), n_threads = n_threads_batch =
// --threads, no performance counters. Its defaults kept on purpose: the load mode (mmap), the
// CPU weight repacking ("extra buffer types"), the F16 KV cache and automatic flash attention.
// The CPU backends are loaded from EBB_LLAMACPP_BIN_DIR (ggml picks the best libggml-cpu-<isa>.so
// for this CPU). Nothing runs before the timed calls: no warm-up decode.
// Greedy = argmax over the last position's logits (the lowest id on ties), as ebb's greedy.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"
#include "probe_util.h"

#ifndef EBB_LLAMACPP_BIN_DIR
#error "EBB_LLAMACPP_BIN_DIR (the folder with libggml-cpu-*.so) must be defined"
#endif

namespace {

bool g_verbose = false;

void Log(enum ggml_log_level level, const char* text, void*) {
  if (g_verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int32_t Argmax(const float* logits, int32_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

}  // namespace

int main(int argc, char** argv) {
  const auto t_main = probe::Clock::now();
  probe::Result r;
  r.engine = "llama.cpp";
  r.args = probe::ParseArgs(argc, argv);
  g_verbose = r.args.verbose;
  llama_log_set(Log, nullptr);
  ggml_backend_load_all_from_path(EBB_LLAMACPP_BIN_DIR);
  llama_backend_init();

  const auto t0 = probe::Clock::now();
  llama_model* model =
      llama_model_load_from_file(r.args.model.c_str(), llama_model_default_params());
  if (!model) {
    std::fprintf(stderr, "llamacpp_probe: could not load %s (--verbose shows why)\n",
                 r.args.model.c_str());
    return 1;
  }
  const auto t1 = probe::Clock::now();
  r.load_s = probe::Seconds(t0, t1);
  r.after_load = probe::Memory::Now();

  const int n_prompt = r.args.prompt_tokens;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_prompt + r.args.gen_tokens);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(std::max(n_prompt, 512));
  cp.n_threads = cp.n_threads_batch = r.args.threads;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llamacpp_probe: could not create a context (--verbose shows why)\n");
    return 1;
  }
  const auto t2 = probe::Clock::now();
  r.context_s = probe::Seconds(t1, t2);

  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const auto prompt = probe::Prompt(n_prompt, n_vocab);
  llama_batch batch = llama_batch_init(n_prompt, 0, 1);
  batch.n_tokens = n_prompt;
  for (int i = 0; i < n_prompt; ++i) {
    batch.token[i] = prompt[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = i == n_prompt - 1;  // logits of the last position only
  }
  if (llama_decode(ctx, batch) != 0) {
    std::fprintf(stderr, "llamacpp_probe: llama_decode failed on the prompt\n");
    return 1;
  }
  const auto t3 = probe::Clock::now();
  r.prefill_s = probe::Seconds(t2, t3);
  r.tokens.push_back(Argmax(llama_get_logits_ith(ctx, -1), n_vocab));
  const auto t4 = probe::Clock::now();
  probe::AnnounceFirstToken(r.tokens[0]);
  r.first_token_s = probe::Seconds(t_main, t4);

  while (static_cast<int>(r.tokens.size()) < r.args.gen_tokens) {
    batch.n_tokens = 1;
    batch.token[0] = r.tokens.back();
    batch.pos[0] = n_prompt + static_cast<int>(r.tokens.size()) - 1;
    batch.logits[0] = 1;
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "llamacpp_probe: llama_decode failed at token %zu\n", r.tokens.size());
      return 1;
    }
    r.tokens.push_back(Argmax(llama_get_logits_ith(ctx, -1), n_vocab));
  }
  r.decode_s = probe::Seconds(t4, probe::Clock::now());
  r.at_end = probe::Memory::Now();

  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  probe::PrintJson(r);
  return 0;
}
