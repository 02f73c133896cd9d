// bench/llamacpp/probe_util.h — what ebb_probe and llamacpp_probe share, so that both measure
// and report the same way: the command line, the prompt, the clock, per-token timestamps, /proc
// memory figures and the JSON line bench/vs_llamacpp.py reads. Header-only; no dependency on
// either engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace probe {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The warm-up generation (--warmup): this many prompt tokens (at most --prompt-tokens), then
// this many sampled tokens (at most --gen-tokens), so that it always fits the timed context.
constexpr int kWarmupPromptTokens = 32;
constexpr int kWarmupGenTokens = 8;

struct Args {
  std::string model;  // ebb: a model folder; llama.cpp: a .gguf file
  int threads = 2;    // intra-op threads (ebb) / n_threads and n_threads_batch (llama.cpp)
  int prompt_tokens = 128;
  int gen_tokens = 32;   // tokens sampled, the first one included
  int warm_steps = 8;    // decode_warm_tok_s leaves out the first this many decode steps
  bool warmup = false;   // one short untimed generation before the timed one
  bool verbose = false;  // llama.cpp: its own log on stderr
  // Concurrent mode (--streams N, N >= 1; docs/benchmarks.md "Concurrent streams"): N sequences,
  // each with its own prompt (Prompt(..., StreamSalt(i))), generated at once. ebb: N threads,
  // each with its own Generator, through the batched decode (--stream-mode batched:
  // decode_batch.max_rows = N) or as N plain concurrent generators (--stream-mode threads);
  // llama.cpp: N sequences in one llama_decode per step (n_seq_max = N, unified KV). 0: the
  // single-generation mode above.
  int streams = 0;
  std::string stream_mode = "batched";  // ebb only: batched | threads
  // ebb only: --option K=V (repeatable), ModelOptions::Set after the probe's own settings.
  std::vector<std::pair<std::string, std::string>> ebb_options;
  // llama.cpp only (llamacpp_probe; ebb_probe rejects them):
  std::string flash_attn = "auto";     // on | off | auto: llama_context_params.flash_attn_type
  std::string mmap = "auto";           // on | off | auto: llama_model_params.load_mode
  std::string cpu_backend = "native";  // native | an ISA name (haswell, ...) | a .so path
  std::string kv_unified = "on";       // on | off: llama_context_params.kv_unified (--streams)
};

// Parses the command line (see usage below); exits 2 on error. llama: whether the llama.cpp-only
// options are accepted (llamacpp_probe) or rejected (ebb_probe).
inline Args ParseArgs(int argc, char** argv, bool llama) {
  Args a;
  auto usage = [&](const std::string& why) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s --model PATH [--threads 2] [--prompt-tokens 128] "
                 "[--gen-tokens 32] [--warm-steps 8] [--warmup] [--verbose] [--streams N]%s\n",
                 argv[0], why.c_str(), argv[0],
                 llama ? " [--flash-attn on|off|auto] [--mmap on|off|auto] "
                         "[--cpu-backend native|<isa>|<path to libggml-cpu-*.so>] "
                         "[--kv-unified on|off]"
                       : " [--stream-mode batched|threads] [--option K=V]...");
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--verbose") {
      a.verbose = true;
      continue;
    }
    if (k == "--warmup") {
      a.warmup = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + k);
    const std::string v = argv[++i];
    auto num = [&](long min) {
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || x < min || x > 1000000) {
        usage(k + " needs an integer >= " + std::to_string(min) + ", got '" + v + "'");
      }
      return static_cast<int>(x);
    };
    auto choice = [&]() {
      if (v != "on" && v != "off" && v != "auto")
        usage(k + " needs on, off or auto, got '" + v + "'");
      return v;
    };
    if (k == "--model") {
      a.model = v;
    } else if (k == "--threads") {
      a.threads = num(1);
    } else if (k == "--prompt-tokens") {
      a.prompt_tokens = num(1);
    } else if (k == "--gen-tokens") {
      a.gen_tokens = num(1);
    } else if (k == "--warm-steps") {
      a.warm_steps = num(0);
    } else if (k == "--streams") {
      a.streams = num(1);
      if (a.streams > 64) usage("--streams needs 1 to 64, got '" + v + "'");
    } else if (!llama && k == "--stream-mode") {
      if (v != "batched" && v != "threads") {
        usage("--stream-mode needs batched or threads, got '" + v + "'");
      }
      a.stream_mode = v;
    } else if (!llama && k == "--option") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage("--option needs K=V, got '" + v + "'");
      a.ebb_options.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (llama && k == "--flash-attn") {
      a.flash_attn = choice();
    } else if (llama && k == "--mmap") {
      a.mmap = choice();
    } else if (llama && k == "--kv-unified") {
      if (v != "on" && v != "off") usage("--kv-unified needs on or off, got '" + v + "'");
      a.kv_unified = v;
    } else if (llama && k == "--cpu-backend") {
      if (v.empty()) usage("--cpu-backend needs a value");
      a.cpu_backend = v;
    } else {
      usage("unknown option " + k);
    }
  }
  if (a.model.empty()) usage("--model is required");
  // The warm decode rate needs at least one decode step after the warm ones.
  if (a.gen_tokens < a.warm_steps + 2) {
    usage("--gen-tokens must be >= --warm-steps + 2 (got " + std::to_string(a.gen_tokens) +
          " and " + std::to_string(a.warm_steps) + ")");
  }
  return a;
}

// The prompt both engines get: deterministic ids in [1, min(vocab, 4096) - 64), i.e. below the
// synthesized models' special tokens (the last 5 ids of the learned tokenizer, <= 4096). salt 0:
// the timed prompt; another salt: other ids (the warm-up's, so that nothing it leaves behind can
// serve as a cached prefix of the timed prompt).
inline std::vector<int32_t> Prompt(int n, int64_t vocab, int salt = 0) {
  const int64_t range = (vocab < 4096 ? vocab : 4096) - 64 - 1;
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) {
    p[i] = static_cast<int32_t>(1 + (int64_t{i} * 7919 + 11 + int64_t{salt} * 104729) % range);
  }
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

// The prompt salt of concurrent stream i: stream 0 gets the single-generation mode's prompt, so
// that its greedy tokens can be compared with a solo run; the others get ids of their own.
inline int StreamSalt(int i) { return i == 0 ? 0 : 100 + i; }

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

// s as a JSON string literal (quotes included).
inline std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

// Times, in seconds: load = model load; warmup = the --warmup generation (0 without it; ebb:
// its own Generator, created and destroyed; llama.cpp: in the timed context, whose memory is
// then cleared); context = ebb Generator / llama.cpp context creation (KV cache and buffers);
// prefill = the prompt's forward pass (one batch, logits of the last position); first_token =
// main() entry -> first token sampled (the warm-up included); decode = first token sampled ->
// last token sampled (gen_tokens - 1 forward passes and samplings). token_times: when each
// token was sampled, in seconds after the first one (so token_times[0] = 0).
struct Result {
  const char* engine = "";
  Args args;
  double load_s = 0, warmup_s = 0, context_s = 0, prefill_s = 0, first_token_s = 0, decode_s = 0;
  Memory after_load, at_end;
  std::vector<int32_t> tokens;  // the sampled tokens, in order
  std::vector<double> token_times;
  std::string extra_json;  // engine-specific fields: `"key": value, ` pairs, each ending ", "

  // Records a sampled token and its time; t0 = when the first token was sampled.
  void AddToken(int32_t id, Clock::time_point t0, Clock::time_point now) {
    tokens.push_back(id);
    token_times.push_back(Seconds(t0, now));
  }
};

// Tokens per second over the decode steps after the first `skip` ones (step k samples token k,
// k >= 1): (n - 1 - skip) / (token_times[n-1] - token_times[skip]); 0 when there are none (a
// generation that stopped early at EOS).
inline double DecodeRate(const Result& r, int skip) {
  const int n = static_cast<int>(r.token_times.size());
  if (n - 1 - skip < 1) return 0.0;
  const double dt = r.token_times[n - 1] - r.token_times[skip];
  return dt > 0 ? (n - 1 - skip) / dt : 0.0;
}

// Concurrent mode (--streams): every stream's sampled tokens and when each was sampled, in
// seconds after `start` (taken once, just before every stream's prompt is fed), so that the
// harness can compute the aggregate and per-stream rates on one clock.
struct StreamsResult {
  const char* engine = "";
  Args args;
  double load_s = 0;
  Memory after_load, at_end;
  std::vector<std::vector<int32_t>> tokens;  // [stream][i]
  std::vector<std::vector<double>> times;    // [stream][i], seconds after the common start
  std::string extra_json;                    // as Result::extra_json
};

inline void PrintStreamsJson(const StreamsResult& r) {
  std::printf("{\"engine\": \"%s\", \"mode\": \"streams\", \"model\": %s, \"threads\": %d, ",
              r.engine, JsonString(r.args.model).c_str(), r.args.threads);
  std::printf("\"streams\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d, ", r.args.streams,
              r.args.prompt_tokens, r.args.gen_tokens);
  std::printf("\"load_s\": %.6f, \"peak_rss_mib\": %.1f, \"rss_anon_after_load_mib\": %.1f, ",
              r.load_s, StatusMiB("VmHWM"), r.after_load.anon_mib);
  std::printf("\"rss_file_after_load_mib\": %.1f, \"rss_anon_end_mib\": %.1f, %s",
              r.after_load.file_mib, r.at_end.anon_mib, r.extra_json.c_str());
  std::printf("\"stream_times_s\": [");
  for (size_t s = 0; s < r.times.size(); ++s) {
    std::printf(s ? ", [" : "[");
    for (size_t i = 0; i < r.times[s].size(); ++i) {
      std::printf(i ? ", %.6f" : "%.6f", r.times[s][i]);
    }
    std::printf("]");
  }
  std::printf("], \"stream_tokens\": [");
  for (size_t s = 0; s < r.tokens.size(); ++s) {
    std::printf(s ? ", [" : "[");
    for (size_t i = 0; i < r.tokens[s].size(); ++i) {
      std::printf(i ? ", %d" : "%d", r.tokens[s][i]);
    }
    std::printf("]");
  }
  std::printf("]}\n");
  std::fflush(stdout);
}

inline void PrintJson(const Result& r) {
  std::printf("{\"engine\": \"%s\", \"model\": %s, \"threads\": %d, \"prompt_tokens\": %d, ",
              r.engine, JsonString(r.args.model).c_str(), r.args.threads, r.args.prompt_tokens);
  std::printf("\"gen_tokens\": %d, \"warm_steps\": %d, \"warmup\": %s, ",
              static_cast<int>(r.tokens.size()), r.args.warm_steps,
              r.args.warmup ? "true" : "false");
  std::printf("\"load_s\": %.6f, \"warmup_s\": %.6f, \"context_s\": %.6f, \"prefill_s\": %.6f, ",
              r.load_s, r.warmup_s, r.context_s, r.prefill_s);
  std::printf("\"prefill_tok_s\": %.3f, \"first_token_s\": %.6f, \"decode_s\": %.6f, ",
              r.prefill_s > 0 ? r.args.prompt_tokens / r.prefill_s : 0.0, r.first_token_s,
              r.decode_s);
  std::printf("\"decode_tok_s\": %.3f, \"decode_warm_tok_s\": %.3f, ", DecodeRate(r, 0),
              DecodeRate(r, r.args.warm_steps));
  std::printf("\"peak_rss_mib\": %.1f, \"rss_anon_after_load_mib\": %.1f, ", StatusMiB("VmHWM"),
              r.after_load.anon_mib);
  std::printf("\"rss_file_after_load_mib\": %.1f, \"rss_anon_end_mib\": %.1f, ",
              r.after_load.file_mib, r.at_end.anon_mib);
  std::printf("\"rss_file_end_mib\": %.1f, %s\"token_times_s\": [", r.at_end.file_mib,
              r.extra_json.c_str());
  for (size_t i = 0; i < r.token_times.size(); ++i) {
    std::printf(i ? ", %.6f" : "%.6f", r.token_times[i]);
  }
  std::printf("], \"tokens\": [");
  for (size_t i = 0; i < r.tokens.size(); ++i) std::printf(i ? ", %d" : "%d", r.tokens[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

}  // namespace probe
