// bench/llamacpp/probe_util.h — what ebb_probe and llamacpp_probe share, so that both measure
// and report the same way: the command line, the prompt, the clock, /proc memory figures and
// the JSON line bench/vs_llamacpp.py reads. Header-only; no dependency on either engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace probe {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Args {
  std::string model;  // ebb: a model folder; llama.cpp: a .gguf file
  int threads = 2;    // intra-op threads (ebb) / n_threads and n_threads_batch (llama.cpp)
  int prompt_tokens = 128;
  int gen_tokens = 32;   // tokens sampled, the first one included
  bool verbose = false;  // llama.cpp: its own log on stderr
};

// Parses --model PATH --threads N --prompt-tokens N --gen-tokens N [--verbose]; exits 2 on error.
inline Args ParseArgs(int argc, char** argv) {
  Args a;
  auto usage = [&](const char* why) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s --model PATH [--threads 2] [--prompt-tokens 128] "
                 "[--gen-tokens 32] [--verbose]\n",
                 argv[0], why, argv[0]);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--verbose") {
      a.verbose = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + k).c_str());
    const std::string v = argv[++i];
    auto num = [&]() {
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || x < 1 || x > 1000000) {
        usage((k + " needs a positive integer, got '" + v + "'").c_str());
      }
      return static_cast<int>(x);
    };
    if (k == "--model") {
      a.model = v;
    } else if (k == "--threads") {
      a.threads = num();
    } else if (k == "--prompt-tokens") {
      a.prompt_tokens = num();
    } else if (k == "--gen-tokens") {
      a.gen_tokens = num();
    } else {
      usage(("unknown option " + k).c_str());
    }
  }
  if (a.model.empty()) usage("--model is required");
  return a;
}

// The prompt both engines get: deterministic ids in [1, min(vocab, 4096) - 64), i.e. below the
// synthesized models' special tokens (the last 5 ids of the learned tokenizer, <= 4096).
inline std::vector<int32_t> Prompt(int n, int64_t vocab) {
  const int64_t range = (vocab < 4096 ? vocab : 4096) - 64 - 1;
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = static_cast<int32_t>(1 + (int64_t{i} * 7919 + 11) % range);
  return p;
}

// One field of /proc/self/status in MiB (VmHWM = peak RSS, RssAnon, RssFile); -1 if absent.
inline double StatusMiB(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::strtod(line.c_str() + n + 1, nullptr) / 1024.0;  // the kernel reports kB
    }
  }
  return -1;
}

struct Memory {
  double anon_mib = 0, file_mib = 0;
  static Memory Now() { return {StatusMiB("RssAnon"), StatusMiB("RssFile")}; }
};

// Announces the first sampled token at once (flushed), so that the parent can time process
// start -> first token from outside.
inline void AnnounceFirstToken(int32_t id) {
  std::printf("first_token %d\n", id);
  std::fflush(stdout);
}

// Times, in seconds: load = model load; context = ebb Generator / llama.cpp context creation (KV
// cache and buffers); prefill = the prompt's forward pass (one batch, logits of the last
// position); first_token = main() entry -> first token sampled; decode = first token sampled ->
// last token sampled (gen_tokens - 1 forward passes and samplings).
struct Result {
  const char* engine = "";
  Args args;
  double load_s = 0, context_s = 0, prefill_s = 0, first_token_s = 0, decode_s = 0;
  Memory after_load, at_end;
  std::vector<int32_t> tokens;  // the sampled tokens, in order
};

inline void PrintJson(const Result& r) {
  const int n_dec = static_cast<int>(r.tokens.size()) - 1;
  std::printf("{\"engine\": \"%s\", \"model\": \"%s\", \"threads\": %d, \"prompt_tokens\": %d, ",
              r.engine, r.args.model.c_str(), r.args.threads, r.args.prompt_tokens);
  std::printf("\"gen_tokens\": %d, \"load_s\": %.6f, \"context_s\": %.6f, \"prefill_s\": %.6f, ",
              static_cast<int>(r.tokens.size()), r.load_s, r.context_s, r.prefill_s);
  std::printf("\"prefill_tok_s\": %.3f, \"first_token_s\": %.6f, \"decode_s\": %.6f, ",
              r.prefill_s > 0 ? r.args.prompt_tokens / r.prefill_s : 0.0, r.first_token_s,
              r.decode_s);
  std::printf("\"decode_tok_s\": %.3f, ", n_dec > 0 && r.decode_s > 0 ? n_dec / r.decode_s : 0.0);
  std::printf("\"peak_rss_mib\": %.1f, \"rss_anon_after_load_mib\": %.1f, ", StatusMiB("VmHWM"),
              r.after_load.anon_mib);
  std::printf("\"rss_file_after_load_mib\": %.1f, \"rss_anon_end_mib\": %.1f, ",
              r.after_load.file_mib, r.at_end.anon_mib);
  std::printf("\"rss_file_end_mib\": %.1f, \"tokens\": [", r.at_end.file_mib);
  for (size_t i = 0; i < r.tokens.size(); ++i) std::printf(i ? ", %d" : "%d", r.tokens[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

}  // namespace probe
