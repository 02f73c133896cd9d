// bench/llamacpp/llamacpp_probe.cpp — one greedy generation through llama.cpp's C API (the
// prebuilt libraries of the npm package @node-llama-cpp/linux-x64, fetched by
// scripts/bench_bootstrap), measured the way ebb_probe.cpp measures ebb (same command line, same
// prompt, same JSON; see probe_util.h for what each time covers). Used by bench/vs_llamacpp.py.
//
//   llamacpp_probe --model MODEL.gguf --threads 2 --prompt-tokens 512 --gen-tokens 64
//                  [--warm-steps 8] [--warmup] [--flash-attn on|off|auto] [--mmap on|off|auto]
//                  [--cpu-backend native|haswell|<path to libggml-cpu-*.so>] [--verbose]
//
// llama.cpp's defaults except: n_ctx = prompt + gen, n_batch = n_ubatch = max(prompt, 512) (the
// prompt is one llama_decode call and one compute batch), n_threads = n_threads_batch =
// --threads, no performance counters. Its defaults kept on purpose: the CPU weight repacking
// ("extra buffer types") and the F16 KV cache. Chosen on the command line, default = llama.cpp's
// default (auto):
//   --flash-attn  llama_context_params.flash_attn_type (auto: llama.cpp enables it where the
//                 device supports it, which on the CPU is always)
//   --mmap        llama_model_params.load_mode: on = LLAMA_LOAD_MODE_MMAP, off = _NONE (read into
//                 anonymous buffers), auto = _AUTO (mmap where the devices support it: the CPU)
//   --cpu-backend native: ggml_backend_load_all_from_path(EBB_LLAMACPP_BIN_DIR), which loads the
//                 best-scoring libggml-cpu-<isa>.so for this CPU; <isa> (no '/'): only
//                 EBB_LLAMACPP_BIN_DIR/libggml-cpu-<isa>.so; a path: only that library. A library
//                 this CPU cannot run (score 0) is refused: exit 1.
// --warmup: after the context is created, a short generation (probe_util.h's kWarmup*, other
// prompt ids) in the same context, whose memory (KV cells and data) is then cleared with
// llama_memory_clear(llama_get_memory(ctx), true). Without it nothing runs before the timed calls.
// Greedy = argmax over the last position's logits (the lowest id on ties), as ebb's greedy.
//
// The JSON adds what says which kernels ran: the loaded CPU backend library (dladdr on its
// ggml_backend_get_features), every backend registry with its devices and feature list, the model
// buffer types llama.cpp's log names with their MiB ("CPU_REPACK" / "AMX": weights repacked;
// "CPU_Mapped": the mapped file; "CPU": read into memory), weights_repacked, and the flash
// attention and load modes as resolved (from the log when requested as auto).
//
// --streams N (probe_util.h): N sequences in one context (n_seq_max = N; --kv-unified on, the
// default: one KV buffer of N x (prompt + gen) cells, as llama-server's parallel slots; off: a
// buffer per sequence, which llama.h suggests for unrelated prompts), n_ctx = N x (prompt +
// gen), n_batch = n_ubatch = max(N x prompt, 512): every prompt in one llama_decode (logits at
// each sequence's last token), then one llama_decode of N tokens (one per sequence) per step.
// Every stream's token of a step gets the step's time. Prints the streams JSON.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"
#include "probe_util.h"

#ifndef EBB_LLAMACPP_BIN_DIR
#error "EBB_LLAMACPP_BIN_DIR (the folder with libggml-cpu-*.so) must be defined"
#endif

namespace {

// What llama.cpp's log (INFO and above) says about the kernels and buffers; filled by Log().
struct LogFacts {
  std::string line;  // the current, unfinished line
  ggml_log_level last_level = GGML_LOG_LEVEL_INFO;
  std::string backend_path;                  // "load_backend: loaded CPU backend from PATH"
  std::map<std::string, double> model_bufs;  // "<name> model buffer size = <MiB> MiB"
  std::string flash_attn;                    // "Flash Attention enabled" / "... not supported"
  std::string load_mode;                     // "(load_mode = <name>)"
};

bool g_verbose = false;
LogFacts g_log;

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

void ParseLine(const std::string& l) {
  size_t p;
  if ((p = l.find("loaded CPU backend from ")) != std::string::npos) {
    g_log.backend_path = Trim(l.substr(p + 24));
  } else if ((p = l.find(" model buffer size = ")) != std::string::npos) {
    std::string name = l.substr(0, p);
    const size_t colon = name.rfind(':');
    name = Trim(colon == std::string::npos ? name : name.substr(colon + 1));
    g_log.model_bufs[name] += std::strtod(l.c_str() + p + 21, nullptr);
  } else if (l.find("Flash Attention enabled") != std::string::npos) {
    g_log.flash_attn = "on";
  } else if (l.find("Flash Attention not supported") != std::string::npos) {
    g_log.flash_attn = "off";
  } else if ((p = l.find("(load_mode = ")) != std::string::npos) {
    const size_t e = l.find(')', p);
    g_log.load_mode = l.substr(p + 13, e == std::string::npos ? std::string::npos : e - p - 13);
  }
}

// llama.cpp's and ggml's log: all of it on stderr with --verbose, errors always; INFO and above
// (and their continuations) parsed into g_log. DEBUG lines are skipped unparsed: llama.cpp logs
// some at every graph build, i.e. during the timed decode.
void Log(enum ggml_log_level level, const char* text, void*) {
  if (g_verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  if (level != GGML_LOG_LEVEL_CONT) g_log.last_level = level;
  if (g_log.last_level == GGML_LOG_LEVEL_DEBUG) return;
  for (const char* c = text; *c; ++c) {
    if (*c == '\n') {
      ParseLine(g_log.line);
      g_log.line.clear();
    } else {
      g_log.line += *c;
    }
  }
}

int32_t Argmax(const float* logits, int32_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

// Loads the CPU backend(s) --cpu-backend names; false (with a message) if none could be loaded.
bool LoadBackends(const std::string& which) {
  if (which == "native") {
    ggml_backend_load_all_from_path(EBB_LLAMACPP_BIN_DIR);
  } else {
    const std::string path =
        which.find('/') != std::string::npos
            ? which
            : std::string(EBB_LLAMACPP_BIN_DIR) + "/libggml-cpu-" + which + ".so";
    if (!ggml_backend_load(path.c_str())) {
      std::fprintf(stderr,
                   "llamacpp_probe: could not load %s (missing, or this CPU lacks its ISA)\n",
                   path.c_str());
      return false;
    }
  }
  if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
    std::fprintf(stderr, "llamacpp_probe: no CPU backend loaded (--cpu-backend %s)\n",
                 which.c_str());
    return false;
  }
  return true;
}

// The registries, their devices and features, and the CPU backend's library, as JSON fields.
std::string BackendJson() {
  std::string o = "\"backends\": [", cpu_lib;
  for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
    ggml_backend_reg_t reg = ggml_backend_reg_get(i);
    o += i ? ", {" : "{";
    o += "\"name\": " + probe::JsonString(ggml_backend_reg_name(reg)) + ", \"devices\": [";
    for (size_t d = 0; d < ggml_backend_reg_dev_count(reg); ++d) {
      ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, d);
      o += d ? ", {" : "{";
      o += "\"name\": " + probe::JsonString(ggml_backend_dev_name(dev)) +
           ", \"description\": " + probe::JsonString(ggml_backend_dev_description(dev)) + "}";
    }
    o += "], \"features\": {";
    void* fn = ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (fn) {
      auto* f = reinterpret_cast<ggml_backend_get_features_t>(fn)(reg);
      for (int k = 0; f && f[k].name; ++k) {
        o += (k ? ", " : "") + probe::JsonString(f[k].name) + ": " +
             probe::JsonString(f[k].value ? f[k].value : "");
      }
      Dl_info info;  // the shared object that holds the function: the backend's library
      if (std::string(ggml_backend_reg_name(reg)) == "CPU" && dladdr(fn, &info) && info.dli_fname) {
        cpu_lib = info.dli_fname;
      }
    }
    o += "}}";
  }
  o += "], \"cpu_backend_library\": " + probe::JsonString(cpu_lib) + ", ";
  return o;
}

// The log's facts and the requested settings, as JSON fields.
std::string SettingsJson(const probe::Args& a) {
  std::string o = "\"flash_attn\": " + probe::JsonString(a.flash_attn) +
                  ", \"flash_attn_resolved\": " +
                  probe::JsonString(a.flash_attn != "auto"     ? a.flash_attn
                                    : g_log.flash_attn.empty() ? "unknown"
                                                               : g_log.flash_attn) +
                  ", \"mmap\": " + probe::JsonString(a.mmap) + ", \"load_mode_resolved\": " +
                  probe::JsonString(g_log.load_mode.empty() ? "unknown" : g_log.load_mode) +
                  ", \"cpu_backend\": " + probe::JsonString(a.cpu_backend) +
                  ", \"log_backend_path\": " + probe::JsonString(g_log.backend_path) +
                  ", \"model_buffers_mib\": {";
  bool repacked = false, first = true;
  for (const auto& [name, mib] : g_log.model_bufs) {
    char v[32];
    std::snprintf(v, sizeof v, "%.2f", mib);
    o += (first ? "" : ", ") + probe::JsonString(name) + ": " + v;
    first = false;
    repacked |= mib > 0 && (name.find("REPACK") != std::string::npos || name == "AMX");
  }
  o += std::string("}, \"weights_repacked\": ") + (repacked ? "true" : "false") + ", ";
  return o;
}

// Puts n tokens at positions pos0.. into batch (logits for the last one only) and decodes it.
bool Decode(llama_context* ctx, llama_batch& batch, const int32_t* ids, int n, int pos0) {
  batch.n_tokens = n;
  for (int i = 0; i < n; ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = pos0 + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = i == n - 1;
  }
  return llama_decode(ctx, batch) == 0;
}

// Concurrent mode: N sequences decoded together; returns the process exit code.
int RunStreams(llama_model* model, const probe::Args& args, double load_s,
               const probe::Memory& after_load) {
  probe::StreamsResult r;
  r.engine = "llama.cpp";
  r.args = args;
  r.load_s = load_s;
  r.after_load = after_load;
  const int n = args.streams, n_prompt = args.prompt_tokens;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n * (n_prompt + args.gen_tokens));
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(std::max(n * n_prompt, 512));
  cp.n_seq_max = static_cast<uint32_t>(n);
  cp.kv_unified = args.kv_unified == "on";
  cp.n_threads = cp.n_threads_batch = args.threads;
  cp.no_perf = true;
  cp.flash_attn_type = args.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : args.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                  : LLAMA_FLASH_ATTN_TYPE_AUTO;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llamacpp_probe: could not create a context (--verbose shows why)\n");
    return 1;
  }
  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_batch batch = llama_batch_init(std::max(n * n_prompt, n), 0, 1);
  r.tokens.resize(static_cast<size_t>(n));
  r.times.resize(static_cast<size_t>(n));
  const auto start = probe::Clock::now();
  // Every prompt in one batch: sequence s at batch rows [s * n_prompt, (s + 1) * n_prompt).
  batch.n_tokens = n * n_prompt;
  for (int s = 0; s < n; ++s) {
    const auto prompt = probe::Prompt(n_prompt, n_vocab, probe::StreamSalt(s));
    for (int i = 0; i < n_prompt; ++i) {
      const int row = s * n_prompt + i;
      batch.token[row] = prompt[static_cast<size_t>(i)];
      batch.pos[row] = i;
      batch.n_seq_id[row] = 1;
      batch.seq_id[row][0] = s;
      batch.logits[row] = i == n_prompt - 1;
    }
  }
  if (llama_decode(ctx, batch) != 0) {
    std::fprintf(stderr, "llamacpp_probe: llama_decode failed on the prompts\n");
    return 1;
  }
  auto record = [&](auto row_of) {
    const double t = probe::Seconds(start, probe::Clock::now());
    for (int s = 0; s < n; ++s) {
      r.tokens[static_cast<size_t>(s)].push_back(
          Argmax(llama_get_logits_ith(ctx, row_of(s)), n_vocab));
      r.times[static_cast<size_t>(s)].push_back(t);
    }
  };
  record([&](int s) { return s * n_prompt + n_prompt - 1; });
  for (int k = 1; k < args.gen_tokens; ++k) {
    batch.n_tokens = n;
    for (int s = 0; s < n; ++s) {
      batch.token[s] = r.tokens[static_cast<size_t>(s)].back();
      batch.pos[s] = n_prompt + k - 1;
      batch.n_seq_id[s] = 1;
      batch.seq_id[s][0] = s;
      batch.logits[s] = true;
    }
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "llamacpp_probe: llama_decode failed at step %d\n", k);
      return 1;
    }
    record([](int s) { return s; });
  }
  r.at_end = probe::Memory::Now();
  r.extra_json = "\"kv_unified\": " + probe::JsonString(args.kv_unified) + ", " +
                 SettingsJson(args) + BackendJson();
  llama_batch_free(batch);
  llama_free(ctx);
  probe::PrintStreamsJson(r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t_main = probe::Clock::now();
  probe::Result r;
  r.engine = "llama.cpp";
  r.args = probe::ParseArgs(argc, argv, /*llama=*/true);
  g_verbose = r.args.verbose;
  llama_log_set(Log, nullptr);
  if (!LoadBackends(r.args.cpu_backend)) return 1;
  llama_backend_init();

  const auto t0 = probe::Clock::now();
  llama_model_params mp = llama_model_default_params();
  mp.load_mode = r.args.mmap == "on"    ? LLAMA_LOAD_MODE_MMAP
                 : r.args.mmap == "off" ? LLAMA_LOAD_MODE_NONE
                                        : LLAMA_LOAD_MODE_AUTO;
  llama_model* model = llama_model_load_from_file(r.args.model.c_str(), mp);
  if (!model) {
    std::fprintf(stderr, "llamacpp_probe: could not load %s (--verbose shows why)\n",
                 r.args.model.c_str());
    return 1;
  }
  auto t1 = probe::Clock::now();
  r.load_s = probe::Seconds(t0, t1);
  r.after_load = probe::Memory::Now();
  if (r.args.streams > 0) {
    const int rc = RunStreams(model, r.args, r.load_s, r.after_load);
    llama_model_free(model);
    llama_backend_free();
    return rc;
  }

  const int n_prompt = r.args.prompt_tokens;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_prompt + r.args.gen_tokens);
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(std::max(n_prompt, 512));
  cp.n_threads = cp.n_threads_batch = r.args.threads;
  cp.no_perf = true;
  cp.flash_attn_type = r.args.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : r.args.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                    : LLAMA_FLASH_ATTN_TYPE_AUTO;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llamacpp_probe: could not create a context (--verbose shows why)\n");
    return 1;
  }
  auto t2 = probe::Clock::now();
  r.context_s = probe::Seconds(t1, t2);

  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_batch batch = llama_batch_init(n_prompt, 0, 1);
  if (r.args.warmup) {
    const int wp = std::min(probe::kWarmupPromptTokens, n_prompt);
    const int wg = std::min(probe::kWarmupGenTokens, r.args.gen_tokens);
    const auto wprompt = probe::Prompt(wp, n_vocab, /*salt=*/1);
    bool ok = Decode(ctx, batch, wprompt.data(), wp, 0);
    int32_t id = ok ? Argmax(llama_get_logits_ith(ctx, -1), n_vocab) : 0;
    for (int i = 1; ok && i < wg; ++i) {
      ok = Decode(ctx, batch, &id, 1, wp + i - 1);
      if (ok) id = Argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    }
    if (!ok) {
      std::fprintf(stderr, "llamacpp_probe: llama_decode failed in the warm-up\n");
      return 1;
    }
    llama_memory_clear(llama_get_memory(ctx), /*data=*/true);
    const auto tw = probe::Clock::now();
    r.warmup_s = probe::Seconds(t2, tw);
    t2 = tw;
  }

  const auto prompt = probe::Prompt(n_prompt, n_vocab);
  if (!Decode(ctx, batch, prompt.data(), n_prompt, 0)) {
    std::fprintf(stderr, "llamacpp_probe: llama_decode failed on the prompt\n");
    return 1;
  }
  const auto t3 = probe::Clock::now();
  r.prefill_s = probe::Seconds(t2, t3);
  const int32_t first = Argmax(llama_get_logits_ith(ctx, -1), n_vocab);
  const auto t4 = probe::Clock::now();
  r.AddToken(first, t4, t4);
  probe::AnnounceFirstToken(first);
  r.first_token_s = probe::Seconds(t_main, t4);

  while (static_cast<int>(r.tokens.size()) < r.args.gen_tokens) {
    const int32_t last = r.tokens.back();
    if (!Decode(ctx, batch, &last, 1, n_prompt + static_cast<int>(r.tokens.size()) - 1)) {
      std::fprintf(stderr, "llamacpp_probe: llama_decode failed at token %zu\n", r.tokens.size());
      return 1;
    }
    const int32_t id = Argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    r.AddToken(id, t4, probe::Clock::now());
  }
  r.decode_s = r.token_times.back();
  r.at_end = probe::Memory::Now();
  r.extra_json = SettingsJson(r.args) + BackendJson();

  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  probe::PrintJson(r);
  return 0;
}
