// `ebb bench MODEL_DIR [...]`: MLPerf-Client-style timings (TTFT, TPS, end-to-end) plus where the
// memory goes, per iteration and per pool, with a slope; baselines side by side (--compare);
// JSON/CSV/SVG reports. See docs/bench_schema.md.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_runner.h"
#include "bench/environment.h"
#include "bench/prompts.h"
#include "bench/report_csv.h"
#include "bench/report_json.h"
#include "bench/scenarios.h"
#include "bench/svg_chart.h"
#include "cli/commands.h"
#include "cli/input_files.h"
#include "cli/options_flags.h"
#include "core/strings.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "model/genai_config.h"
#include "platform/process.h"

namespace ebb::cli {
namespace {

struct BenchArgs {
  std::string dir;
  std::string scenario = "seed-loop";
  int64_t iterations = 10;
  int64_t warmup = 1;
  int64_t process_warmup = 0;
  double delay_s = 0;
  int64_t prompt_tokens = -1;   // -1: not given (default 128)
  std::string prefix_tokens;    // "": not given (default 1024); parsed in Validate
  std::string question_tokens;  // "": not given (default 64)
  std::string prompt_file;
  int64_t gen_tokens = 32;
  int64_t batch = -1;  // -1: not given (1; embed: 32 texts)
  std::string kv_cache;
  int64_t shrink_every = 0;
  std::vector<std::string> compare;
  std::string json, csv, plot;
  std::string json_schema_file, regex, grammar_file;  // the constraint of constrained=true runs
  OptionFlags options;
};

constexpr int64_t kDefaultPromptTokens = 128;
constexpr int64_t kDefaultEmbedTexts = 32;
constexpr int64_t kDefaultPrefixTokens = 1024;
constexpr int64_t kDefaultQuestionTokens = 64;

void Require(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::InvalidArgument, message);
}

int32_t Positive(int64_t v, const char* flag, int64_t min) {
  Require(v >= min && v <= 1'000'000'000, std::string(flag) + " must be at least " +
                                              std::to_string(min) + " (got " + std::to_string(v) +
                                              ")");
  return static_cast<int32_t>(v);
}

// A count of tokens given as text: a whole number >= 1 (its own message for a non-number, so
// that it names the flag and the fix rather than the parser's conversion).
int32_t TokenCount(const std::string& text, const char* flag, int64_t fallback) {
  if (text.empty()) return static_cast<int32_t>(fallback);
  size_t digits = text[0] == '-' ? 1 : 0;
  bool ok = text.size() > digits && text.size() - digits <= 10;
  for (size_t i = digits; i < text.size(); ++i) ok = ok && text[i] >= '0' && text[i] <= '9';
  Require(ok, std::string(flag) + " '" + text +
                  "' is not a number of tokens; give a whole number, at least 1 (e.g. " + flag +
                  " " + std::to_string(fallback) + ")");
  return Positive(std::stoll(text), flag, 1);
}

bench::BenchOptions Validate(const BenchArgs& a) {
  bench::BenchOptions o;
  o.model_dir = a.dir;
  bench::CheckScenarioName(a.scenario);
  o.scenario = a.scenario;
  const int n_constraints =
      int{!a.json_schema_file.empty()} + int{!a.regex.empty()} + int{!a.grammar_file.empty()};
  Require(n_constraints <= 1, "give one of --json-schema, --regex and --grammar");
  if (!a.json_schema_file.empty()) {
    o.constraint_key = "json_schema";
    o.constraint_text = ReadInputFile(a.json_schema_file, "--json-schema");
  } else if (!a.regex.empty()) {
    o.constraint_key = "regex";
    o.constraint_text = a.regex;
  } else if (!a.grammar_file.empty()) {
    o.constraint_key = "grammar";
    o.constraint_text = ReadInputFile(a.grammar_file, "--grammar");
  }
  o.iterations = Positive(a.iterations, "--iterations", 1);
  o.warmup = Positive(a.warmup, "--warmup", 0);
  o.process_warmup = Positive(a.process_warmup, "--process-warmup", 0);
  Require(a.delay_s >= 0,
          "--delay must be 0 or more seconds (got " + std::to_string(a.delay_s) + ")");
  o.delay_s = a.delay_s;
  Require(a.prompt_tokens < 0 || a.prompt_file.empty(),
          "give one of --prompt-tokens or --prompt-file, not both");
  o.prompt_tokens =
      Positive(a.prompt_tokens < 0 ? kDefaultPromptTokens : a.prompt_tokens, "--prompt-tokens", 1);
  o.prompt_file = a.prompt_file;
  o.prefix_tokens = TokenCount(a.prefix_tokens, "--prefix-tokens", kDefaultPrefixTokens);
  o.question_tokens = TokenCount(a.question_tokens, "--question-tokens", kDefaultQuestionTokens);
  o.gen_tokens = Positive(a.gen_tokens, "--gen-tokens", 1);
  const bool embed = a.scenario == "embed";
  Require(!embed || (a.prompt_tokens < 0 && a.prompt_file.empty()),
          "--scenario embed synthesizes its own documents of mixed lengths; drop --prompt-tokens "
          "and --prompt-file (--batch sets the texts per request)");
  o.batch = Positive(a.batch < 0 ? (embed ? kDefaultEmbedTexts : 1) : a.batch, "--batch", 1);
  if (!a.kv_cache.empty()) {
    Require(a.kv_cache == "static" || a.kv_cache == "dynamic",
            "--kv-cache '" + a.kv_cache + "' is not a KV mode; use static or dynamic");
    o.kv_mode = ParseKvMode(a.kv_cache);
  }
  o.shrink_every = Positive(a.shrink_every, "--shrink-every", 0);
  // --option embed.* are request keys of every embed request; the rest are model options.
  OptionFlags model_flags = a.options;
  model_flags.ebb.clear();
  for (const auto& flag : a.options.ebb) {
    auto [k, v] = SplitKeyValue(flag, "--option");
    if (!k.starts_with("embed.")) {
      model_flags.ebb.push_back(flag);
      continue;
    }
    Require(embed, "--option " + flag +
                       " is an embedding request key; it applies with --scenario embed only");
    EmbedRequest probe;
    probe.Set(k, v);  // a bad key or value fails here, before any run
    o.embed_options.emplace_back(k, v);
  }
  o.model_options = model_flags.ToModelOptions();
  if (o.kv_mode) o.model_options.kv_mode = *o.kv_mode;
  for (const auto& c : a.compare) bench::CheckRunSpec(c, "--compare", o);
  o.compare = a.compare;
  Require(o.UsesRagPrefix() || (a.prefix_tokens.empty() && a.question_tokens.empty()),
          std::string(a.prefix_tokens.empty() ? "--question-tokens" : "--prefix-tokens") +
              " shapes the prompts of rag-prefix runs only; use --scenario rag-prefix (or "
              "--compare rag-prefix,...) or drop it");
  for (const auto& s : a.options.session) o.option_flags.push_back("--session-option " + s);
  for (const auto& s : a.options.provider) o.option_flags.push_back("--provider-option " + s);
  for (const auto& s : a.options.run) o.option_flags.push_back("--run-option " + s);
  for (const auto& s : a.options.ebb) o.option_flags.push_back("--option " + s);
  if (!a.options.ep.empty()) o.option_flags.push_back("--ep " + a.options.ep);
  o.json_path = a.json;
  o.csv_path = a.csv;
  o.plot_path = a.plot;
  return o;
}

// ", device kv 0 B, used 1.2 MiB[, driver 210 MiB]" after a request on an accelerator, else "".
std::string DeviceProgress(const bench::MemorySample& m) {
  if (!m.device.kv_in_use_bytes || !m.device.used_bytes) return "";
  std::string s = ", device kv " + internal::FormatBytes(*m.device.kv_in_use_bytes) + ", used " +
                  internal::FormatBytes(*m.device.used_bytes);
  if (m.device.driver_process_bytes) {
    s += ", driver " + internal::FormatBytes(*m.device.driver_process_bytes);
  }
  return s;
}

// Progress: a redrawn bar on a terminal, one plain line per iteration otherwise (stderr). RSS and,
// on an accelerator, the device's figures are the "after" sample's.
void Progress(const bench::RunResult& run, int32_t done, int32_t total) {
  const auto& it = run.iterations[static_cast<size_t>(done - 1)];
  const std::string mem = internal::FormatBytes(it.after.rss_bytes) + DeviceProgress(it.after);
  if (it.timing.texts > 0) {  // an embed request: texts/s and tokens/s
    const double sec = it.timing.e2e_s > 0 ? it.timing.e2e_s : 1e-9;
    std::fprintf(stderr,
                 "%s iteration %d/%d%s: %d texts, %d tokens (%lld padded), %.3f s, %.1f texts/s, "
                 "%.0f tokens/s, rss %s\n",
                 run.name.c_str(), done, total, it.warmup ? " (warm-up)" : "", it.timing.texts,
                 it.timing.prompt_tokens, static_cast<long long>(it.timing.padded_tokens),
                 it.timing.e2e_s, it.timing.texts / sec, it.timing.prompt_tokens / sec,
                 mem.c_str());
    std::fflush(stderr);
    return;
  }
  if (platform::IsTerminal(platform::StandardStream::kStderr)) {
    constexpr int kWidth = 24;
    const int filled = total > 0 ? done * kWidth / total : kWidth;
    std::fprintf(stderr, "\r%-16s [%s%s] %d/%d  ttft %.1f ms  tps %.1f  rss %s   ",
                 run.name.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total, it.timing.ttft_s * 1e3,
                 it.timing.tps, mem.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "%s iteration %d/%d%s: ttft %.2f ms, tps %.1f, e2e %.3f s, rss %s%s\n",
                 run.name.c_str(), done, total, it.warmup ? " (warm-up)" : "",
                 it.timing.ttft_s * 1e3, it.timing.tps, it.timing.e2e_s, mem.c_str(),
                 it.timing.cached_tokens > 0
                     ? (", " + std::to_string(it.timing.cached_tokens) + " of " +
                        std::to_string(it.timing.prompt_tokens) + " prompt tokens cached")
                           .c_str()
                     : "");
  }
  std::fflush(stderr);
}

std::string SignedBytes(double b) {
  const std::string s = internal::FormatBytes(static_cast<uint64_t>(b < 0 ? -b : b));
  return (b < 0 ? "-" : "+") + s;
}

// The summary of embed runs: throughput (real tokens) and memory; ratios against the first run.
void PrintEmbedSummary(std::FILE* f, const std::vector<bench::RunResult>& runs, int w) {
  std::fprintf(f, "%-*s %5s %10s %12s %8s %10s %9s %12s %12s %22s %10s\n", w, "run", "iters",
               "texts/s", "tokens/s", "padding", "e2e p50", "setup", "peak rss", "arena peak",
               "rss slope/iter (+-se)", "rss moved");
  for (const auto& r : runs) {
    const auto& s = r.summary;
    const bench::EmbedSummary e = s.embed.value_or(bench::EmbedSummary{});
    uint64_t arena_peak = 0;
    for (const auto& it : r.iterations) {
      for (const auto* m : {&it.before, &it.last_token, &it.after}) {
        arena_peak = std::max(arena_peak, m->arena.total_allocated_bytes.value_or(0));
      }
    }
    const std::string slope =
        SignedBytes(s.rss_slope.slope) + " +- " +
        internal::FormatBytes(static_cast<uint64_t>(s.rss_slope.slope_stderr));
    const std::string moved =
        std::to_string(s.rss_steps.changed) + "/" + std::to_string(s.rss_steps.intervals);
    const double padding =
        e.tokens > 0 ? static_cast<double>(e.padded_tokens) / static_cast<double>(e.tokens) : 0;
    std::fprintf(f, "%-*s %5d %10.1f %12.1f %7.2fx %9.3fs %8.3fs %12s %12s %22s %10s\n", w,
                 r.name.c_str(), s.measured_iterations, e.texts_per_s, e.tokens_per_s, padding,
                 s.e2e_s.p50, r.setup_s, internal::FormatBytes(s.peak_rss_bytes).c_str(),
                 arena_peak ? internal::FormatBytes(arena_peak).c_str() : "-", slope.c_str(),
                 moved.c_str());
  }
  for (size_t i = 1; i < runs.size(); ++i) {
    const auto& a = runs[i].summary;
    const auto& b = runs[0].summary;
    if (!a.embed || !b.embed) continue;
    auto ratio = [](double x, double y) { return y != 0 ? x / y : 0.0; };
    std::fprintf(
        f, "%s vs %s: tokens/s x%.2f, texts/s x%.2f, peak rss x%.2f\n", runs[i].name.c_str(),
        runs[0].name.c_str(), ratio(a.embed->tokens_per_s, b.embed->tokens_per_s),
        ratio(a.embed->texts_per_s, b.embed->texts_per_s),
        ratio(static_cast<double>(a.peak_rss_bytes), static_cast<double>(b.peak_rss_bytes)));
  }
}

// Each ebb run's first load: its time and anonymous peak, and the compiled-model cache's part
// (docs/memory.md "The first load": a load that builds the entry finishes it in the background).
void PrintFirstLoad(std::FILE* f, const std::vector<bench::RunResult>& runs, int w) {
  bool any = false;
  for (const auto& r : runs) any = any || r.first_load.has_value();
  if (!any) return;
  std::fprintf(f, "first load (anonymous peak: this process's RssAnon, sampled every 10 ms):\n");
  for (const auto& r : runs) {
    if (!r.first_load) continue;
    const WeightsMemory& l = *r.first_load;
    std::string build;
    if (l.cache == "built" || l.cache == "failed") {
      build = ", while building: " + internal::FormatBytes(l.cache_build_peak_anon_bytes);
    }
    std::fprintf(f, "  %-*s %.2fs, anonymous peak %s; cache %s%s\n", w, r.name.c_str(),
                 static_cast<double>(l.load_ms) / 1000.0,
                 internal::FormatBytes(l.load_peak_anon_bytes).c_str(), l.cache.c_str(),
                 build.c_str());
  }
}

// The prefix cache of each ebb run (rag-prefix runs, and any run with prefix_cache.max_bytes):
// its counters over the whole run, and the prompt tokens it gave the measured requests.
void PrintPrefixCache(std::FILE* f, const std::vector<bench::RunResult>& runs, int w,
                      const bench::BenchOptions& o) {
  bool any = o.UsesRagPrefix();
  for (const auto& r : runs) {
    any = any || (r.prefix_cache && (r.prefix_cache->max_bytes > 0 || r.prefix_cache->hits > 0));
  }
  if (!any) return;
  std::fprintf(f,
               "prefix cache (hits, misses, tokens reused: every request of the run, warm-up "
               "included; cached/request: p50 over the measured ones):\n");
  for (const auto& r : runs) {
    if (!r.prefix_cache) continue;
    const PrefixCacheStats& p = *r.prefix_cache;
    std::vector<double> cached;
    for (const auto& it : r.iterations) {
      if (!it.warmup) cached.push_back(static_cast<double>(it.timing.cached_tokens));
    }
    const double cached_p50 = bench::Summarize(cached).p50;
    if (p.max_bytes == 0 && p.hits == 0 && p.misses == 0) {
      std::fprintf(f, "  %-*s off (prefix_cache.max_bytes=0): hits 0, tokens reused 0\n", w,
                   r.name.c_str());
      continue;
    }
    std::fprintf(f,
                 "  %-*s hits %llu, misses %llu, tokens reused %llu, cached/request %.0f; holds "
                 "%s in %llu blocks (max %s), %llu evicted\n",
                 w, r.name.c_str(), static_cast<unsigned long long>(p.hits),
                 static_cast<unsigned long long>(p.misses),
                 static_cast<unsigned long long>(p.tokens_reused), cached_p50,
                 internal::FormatBytes(p.bytes).c_str(), static_cast<unsigned long long>(p.blocks),
                 internal::FormatBytes(p.max_bytes).c_str(),
                 static_cast<unsigned long long>(p.evicted_blocks));
  }
  if (o.warmup == 0) {
    std::fprintf(f,
                 "  (--warmup 0: the medians include each run's first request, which finds the "
                 "cache empty and fills it)\n");
  } else {
    std::fprintf(f,
                 "  (the first request of a run fills the cache; it is a warm-up here, so the "
                 "medians leave it out: --warmup 0 keeps it in)\n");
  }
}

// "flat (slope +0 B/iter) at 1.2 MiB" when a figure never moved after a measured request, else
// how often it moved, its slope and largest step, and its last value.
std::string Trend(const bench::LinearFit& fit, const bench::StepCount& steps, uint64_t last) {
  if (steps.changed == 0) return "flat (slope +0 B/iter) at " + internal::FormatBytes(last);
  return "moved " + std::to_string(steps.changed) + "/" + std::to_string(steps.intervals) +
         " (slope " + SignedBytes(fit.slope) + "/iter +- " +
         internal::FormatBytes(static_cast<uint64_t>(fit.slope_stderr)) + ", largest step " +
         SignedBytes(static_cast<double>(steps.largest_step_bytes)) + "), last " +
         internal::FormatBytes(last);
}

// The accelerator of each ebb run whose KV is on one: whether its KV was back to 0 after every
// generator, and how ebb's device bytes and the driver's figure for the process moved after each
// request (the same fit and step count as RSS). Prints nothing when no run has a device.
void PrintDevice(std::FILE* f, const std::vector<bench::RunResult>& runs) {
  for (const auto& r : runs) {
    if (!r.summary.device || r.iterations.empty()) continue;
    const bench::DeviceSummary& d = *r.summary.device;
    const bench::MemorySample& last = r.iterations.back().after;
    const std::string name = r.device ? r.device->device : std::string("device");
    if (r.device) {
      std::fprintf(f, "device %s, run %s: %s%s%s, weights %s%s\n", name.c_str(), r.name.c_str(),
                   r.device->adapter.empty() ? "adapter unknown" : r.device->adapter.c_str(),
                   r.device->cache_mode.empty() ? "" : ", storageBufferCacheMode ",
                   r.device->cache_mode.c_str(),
                   internal::FormatBytes(r.device->weights_bytes).c_str(),
                   r.device->limit_bytes
                       ? (", gpu_mem_limit " + internal::FormatBytes(r.device->limit_bytes)).c_str()
                       : "");
    }
    const std::optional<bool> back = bench::DeviceKvBackToZero(r);
    std::string kv;
    if (!back) {  // reuse: the generator outlives each request
      kv = "KV in use after each request " + internal::FormatBytes(d.max_kv_in_use_after_bytes) +
           " at most (reuse keeps its generator: not a leak check)";
    } else if (*back) {
      kv = "KV in use after each generator 0 B (" + std::to_string(d.kv_zero_after) + "/" +
           std::to_string(d.iterations) + " iterations)";
    } else {
      kv = "KV in use after each generator NOT 0: up to " +
           internal::FormatBytes(d.max_kv_in_use_after_bytes) + " (0 after " +
           std::to_string(d.kv_zero_after) + "/" + std::to_string(d.iterations) +
           " iterations): FAIL, device KV outlives its generators";
    }
    std::string driver = "driver process bytes not reported (NVML absent)";
    if (d.driver_process_slope && d.driver_process_steps) {
      driver = "driver process bytes " + Trend(*d.driver_process_slope, *d.driver_process_steps,
                                               last.device.driver_process_bytes.value_or(0));
    }
    std::fprintf(f, "device %s: %s, used bytes %s, peak %s; %s\n", name.c_str(), kv.c_str(),
                 Trend(d.used_slope, d.used_steps, last.device.used_bytes.value_or(0)).c_str(),
                 internal::FormatBytes(d.peak_used_bytes).c_str(), driver.c_str());
  }
}

void PrintSummary(std::FILE* f, const std::vector<bench::RunResult>& runs,
                  const bench::BenchOptions& o) {
  int w = 16;  // the name column fits the longest run name
  for (const auto& r : runs) w = std::max(w, static_cast<int>(r.name.size()));
  if (!runs.empty() && runs[0].summary.embed) {
    PrintEmbedSummary(f, runs, w);
    return;
  }
  std::fprintf(f, "%-*s %5s %10s %10s %10s %10s %10s %12s %22s %12s\n", w, "run", "iters",
               "ttft p50", "ttft p90", "tps p50", "e2e p50", "setup", "peak rss",
               "rss slope/iter (+-se)", "rss moved");
  for (const auto& r : runs) {
    const auto& s = r.summary;
    const std::string slope =
        SignedBytes(s.rss_slope.slope) + " +- " +
        internal::FormatBytes(static_cast<uint64_t>(s.rss_slope.slope_stderr));
    const std::string moved =
        std::to_string(s.rss_steps.changed) + "/" + std::to_string(s.rss_steps.intervals);
    std::fprintf(f, "%-*s %5d %8.2fms %8.2fms %10.1f %9.3fs %9.3fs %12s %22s %12s\n", w,
                 r.name.c_str(), s.measured_iterations, s.ttft_s.p50 * 1e3, s.ttft_s.p90 * 1e3,
                 s.tps.p50, s.e2e_s.p50, r.setup_s, internal::FormatBytes(s.peak_rss_bytes).c_str(),
                 slope.c_str(), moved.c_str());
  }
  for (size_t i = 1; i < runs.size(); ++i) {
    const auto& a = runs[i].summary;
    const auto& b = runs[0].summary;
    auto ratio = [](double x, double y) { return y != 0 ? x / y : 0.0; };
    std::fprintf(
        f, "%s vs %s: ttft x%.2f, tps x%.2f, e2e x%.2f, peak rss x%.2f\n", runs[i].name.c_str(),
        runs[0].name.c_str(), ratio(a.ttft_s.p50, b.ttft_s.p50), ratio(a.tps.p50, b.tps.p50),
        ratio(a.e2e_s.p50, b.e2e_s.p50),
        ratio(static_cast<double>(a.peak_rss_bytes), static_cast<double>(b.peak_rss_bytes)));
  }
  // Structured output: the constraint's cost per token beside the runs without one.
  for (const auto& r : runs) {
    const auto& s = r.summary;
    if (!s.constraint_ms_per_token) continue;
    std::fprintf(f,
                 "%s: constraint (%s) %.3f ms per token p50 (p90 %.3f), %.1f%% of the time per "
                 "output token p50\n",
                 r.name.c_str(), o.constraint_key.c_str(), s.constraint_ms_per_token->p50,
                 s.constraint_ms_per_token->p90,
                 s.constraint_share ? s.constraint_share->p50 * 100 : 0.0);
  }
  PrintFirstLoad(f, runs, w);
  PrintPrefixCache(f, runs, w, o);
  PrintDevice(f, runs);
}

// Generation scenarios need a decoder and `embed` an encoder; every run spec must fit the model.
void CheckModelKind(const internal::GenaiConfig& config, const bench::BenchOptions& o,
                    const std::vector<bench::RunSpec>& specs) {
  const std::string dir = o.model_dir.string();
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& b = specs[i].base;
    const std::string flag = i == 0 ? "--scenario " : "--compare ";
    if (config.is_encoder && b != "embed" && !(b == "naive-ort" && o.scenario == "embed")) {
      throw Error(ErrorCode::InvalidArgument,
                  dir + " is an encoder (embedding) model, and " + flag + specs[i].text +
                      (b == "naive-ort" ? " (with --scenario " + o.scenario + ")" : "") +
                      " generates text, which needs a decoder; use --scenario embed (and "
                      "--compare naive-ort for the hand-written ORT loop)");
    }
    if (!config.is_encoder && b == "embed") {
      throw Error(ErrorCode::InvalidArgument,
                  flag + specs[i].text +
                      " embeds texts, which needs an encoder (embedding) "
                      "model, and " +
                      dir + " is a decoder (" + config.model_type +
                      "); give an encoder folder (docs/embeddings.md) or use a generation "
                      "scenario: seed-loop, reuse, rag or load-unload");
    }
  }
}

void RunBench(const BenchArgs& args) {
  const bench::BenchOptions o = Validate(args);
  const internal::GenaiConfig config = internal::LoadModelFolderConfig(o.model_dir);
  std::vector<bench::RunSpec> specs{bench::ParseRunSpec(o.scenario, "--scenario")};
  for (const auto& c : o.compare) specs.push_back(bench::ParseRunSpec(c, "--compare"));
  CheckModelKind(config, o, specs);
  std::vector<int32_t> specials = config.eos_token_ids;
  if (config.bos_token_id >= 0) specials.push_back(config.bos_token_id);
  if (config.pad_token_id >= 0) specials.push_back(config.pad_token_id);
  const bool embed = o.scenario == "embed";
  std::vector<int32_t> base =
      o.prompt_file.empty()
          ? bench::PromptSet::Synthesize(embed ? 1 : o.prompt_tokens, config.vocab_size, specials)
          : bench::TokenizePromptFile(o.prompt_file, o.model_dir);
  const int32_t context = config.context_length;
  // Embed runs: [CLS] body [SEP] rows (the genai layout names them as bos/eos), up to the
  // model's maximum input length.
  const bench::EmbedDocuments documents(
      config.vocab_size, specials, config.bos_token_id,
      config.eos_token_ids.empty() ? -1 : config.eos_token_ids[0],
      config.encoder.max_length > 0 ? config.encoder.max_length : std::max(1, context));
  // rag and rag-prefix runs (and naive-ort under --scenario rag or rag-prefix) pick their own
  // lengths; any other run uses the fixed prompt, which must fit.
  bool any_fixed = false;
  for (const auto& spec : specs) {
    const std::string& kind = spec.base == "naive-ort" ? o.scenario : spec.base;
    any_fixed = any_fixed || (!embed && bench::PromptKindOf(kind) == bench::PromptKind::kFixed);
  }
  if (any_fixed && static_cast<int64_t>(base.size()) + o.gen_tokens > context) {
    throw Error(ErrorCode::InvalidArgument,
                "the prompt (" + std::to_string(base.size()) + " tokens) plus --gen-tokens " +
                    std::to_string(o.gen_tokens) + " exceeds the model's context_length " +
                    std::to_string(context) + "; lower --prompt-tokens or --gen-tokens");
  }
  // rag-prefix: the prefix (the prompt file's tokens repeated, or synthesized ids) and the
  // question must leave room for --gen-tokens; a prefix that does not fit is cut to the context.
  bench::RagPrefixPrompts rag_prefix;
  if (o.UsesRagPrefix()) {
    if (static_cast<int64_t>(o.question_tokens) + o.gen_tokens >= context) {
      throw Error(ErrorCode::InvalidArgument,
                  "--question-tokens " + std::to_string(o.question_tokens) + " plus --gen-tokens " +
                      std::to_string(o.gen_tokens) +
                      " leaves no room for a prefix in the model's "
                      "context_length " +
                      std::to_string(context) + "; lower --question-tokens or --gen-tokens");
    }
    if (o.prompt_file.empty()) {
      rag_prefix.prefix =
          bench::PromptSet::Synthesize(o.prefix_tokens, config.vocab_size, specials);
    } else {
      while (static_cast<int32_t>(rag_prefix.prefix.size()) < o.prefix_tokens) {
        const size_t take =
            std::min(base.size(), static_cast<size_t>(o.prefix_tokens) - rag_prefix.prefix.size());
        rag_prefix.prefix.insert(rag_prefix.prefix.end(), base.begin(),
                                 base.begin() + static_cast<std::ptrdiff_t>(take));
      }
    }
    rag_prefix.question_tokens = o.question_tokens;
  }
  const bench::PromptSet prompts(base, config.vocab_size, specials,
                                 std::max(1, context - o.gen_tokens), std::move(rag_prefix));
  if (o.UsesRagPrefix() && static_cast<int32_t>(prompts.rag_prefix().size()) < o.prefix_tokens) {
    std::fprintf(stderr,
                 "note: --prefix-tokens %d cut to %zu so that prefix + --question-tokens %d + "
                 "--gen-tokens %d fit the model's context_length %d\n",
                 o.prefix_tokens, prompts.rag_prefix().size(), o.question_tokens, o.gen_tokens,
                 context);
  }

  // Build every workload first, so that a bad combination fails before any run. Each run has its
  // own options (the spec's overrides applied); a deque keeps them where the workloads borrow them.
  std::deque<bench::BenchOptions> run_options;
  std::vector<std::unique_ptr<bench::Workload>> workloads;
  for (const auto& spec : specs) {
    run_options.push_back(bench::RunOptions(spec, o, "--compare"));
    workloads.push_back(bench::MakeWorkload(spec, run_options.back(), prompts, &documents));
  }

  const bench::Environment env = bench::ReadEnvironment();
  if (o.process_warmup > 0) {
    auto w = bench::MakeWorkload(specs[0], run_options[0], prompts, &documents);
    bench::RunProcessWarmup(*w, o.process_warmup, [&](int32_t done, int32_t total) {
      std::fprintf(
          stderr, "%sprocess warm-up (%s) %d/%d%s",
          platform::IsTerminal(platform::StandardStream::kStderr) ? "\r" : "",
          specs[0].text.c_str(), done, total,
          platform::IsTerminal(platform::StandardStream::kStderr) && done < total ? "   " : "\n");
      std::fflush(stderr);
    });
  }
  // A run that fails (a budget, a bad override) stops the bench, but the runs that completed are
  // still reported: a long benchmark loses nothing it measured.
  std::vector<bench::RunResult> runs;
  std::optional<Error> failure;
  for (size_t i = 0; i < workloads.size(); ++i) {
    try {
      runs.push_back(bench::RunWorkload(*workloads[i], run_options[i], Progress));
    } catch (const Error& e) {
      failure.emplace(e.code(), "run '" + workloads[i]->name() + "' failed: " + e.what());
      break;
    }
    for (const auto& [k, v] : specs[i].options) runs.back().overrides.push_back(k + "=" + v);
    workloads[i].reset();  // free the run's memory before the next one starts
  }

  if (!runs.empty()) {
    std::FILE* summary_out = o.json_path == "-" ? stderr : stdout;
    PrintSummary(summary_out, runs, o);
    if (!o.json_path.empty()) {
      bench::WriteTextFile(o.json_path, bench::ReportJson(env, o, runs).dump(2) + "\n", "--json");
    }
    if (!o.csv_path.empty()) bench::WriteTextFile(o.csv_path, bench::ReportCsv(runs), "--csv");
    if (!o.plot_path.empty()) {
      bench::WriteTextFile(o.plot_path, bench::RenderSvgChart(runs, o), "--plot");
    }
  }
  if (failure) {
    if (runs.empty()) throw *failure;
    throw Error(failure->code(), std::string(failure->what()) + " (the reports hold the " +
                                     std::to_string(runs.size()) + " run(s) that completed)");
  }
}

}  // namespace

void RegisterBenchCommand(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Benchmark TTFT/TPS and memory per iteration and per pool, with baselines");
  cmd->add_option("MODEL_DIR", a->dir,
                  "onnxruntime-genai model folder (embed: an encoder folder, either layout)")
      ->required()
      ->check(ModelDir());
  cmd->add_option("--scenario", a->scenario,
                  "seed-loop (generator per iteration) | reuse (RewindTo(0)) | rag (prompt "
                  "lengths 64..2048) | rag-prefix (one shared --prefix-tokens prefix, then a new "
                  "--question-tokens question every iteration; compare the prefix cache off and "
                  "on with --compare rag-prefix,prefix_cache.max_bytes=256MiB) | load-unload "
                  "(model per iteration) | embed (encoder models: --batch texts of mixed lengths "
                  "per Embed call)")
      ->capture_default_str();
  cmd->add_option("--iterations", a->iterations, "Measured iterations (>= 1)")
      ->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Warm-up iterations, left out of the summary")
      ->capture_default_str();
  cmd->add_option("--process-warmup", a->process_warmup,
                  "Requests of the first run before any run, discarded: lets the process heap "
                  "settle so the first run's slope is not charged for it")
      ->capture_default_str();
  cmd->add_option("--delay", a->delay_s, "Seconds to sleep between iterations")
      ->capture_default_str();
  cmd->add_option("--prompt-tokens", a->prompt_tokens,
                  "Synthesized prompt length in tokens (default 128)");
  cmd->add_option("--prompt-file", a->prompt_file,
                  "Text file tokenized with the model's tokenizer.json, as the prompt (rag-prefix: "
                  "its tokens, repeated, as the prefix)");
  cmd->add_option("--prefix-tokens", a->prefix_tokens,
                  "rag-prefix: tokens of the prefix every request shares (default 1024; cut to "
                  "fit the context)")
      ->type_name("INT");
  cmd->add_option("--question-tokens", a->question_tokens,
                  "rag-prefix: tokens of the question after the prefix, different every "
                  "iteration (default 64)")
      ->type_name("INT");
  cmd->add_option("--gen-tokens", a->gen_tokens, "Tokens to generate per sequence")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch,
                  "Sequences per request (default 1); embed: texts per request (default 32)");
  cmd->add_option("--kv-cache", a->kv_cache, "KV mode: static|dynamic (default: the model's)");
  cmd->add_option(
         "--shrink-every", a->shrink_every,
         "Shrink after every N-th iteration: ebb ShrinkArena, naive-ort malloc_trim (0: never)")
      ->capture_default_str();
  cmd->add_option("--compare", a->compare,
                  "Extra runs in this process, side by side: naive-ort, recycle:K, or a scenario, "
                  "each optionally with ,KEY=VALUE overrides (shrink-every=N or an option key, "
                  "e.g. rag,memory.shrink_every=10)")
      ->expected(1, -1);
  cmd->add_option("--json-schema", a->json_schema_file,
                  "Structured output for the runs with constrained=true (e.g. --compare "
                  "seed-loop,constrained=true): the JSON Schema in FILE");
  cmd->add_option("--regex", a->regex, "As --json-schema, with a regular expression");
  cmd->add_option("--grammar", a->grammar_file, "As --json-schema, with the GBNF grammar in FILE");
  cmd->add_option("--json", a->json, "Write the JSON report to FILE ('-': stdout)");
  cmd->add_option("--csv", a->csv, "Write one CSV row per iteration and run to FILE");
  cmd->add_option("--plot", a->plot, "Write an SVG chart (memory, TTFT, TPS) to FILE.svg");
  AddOptionFlags(*cmd, a->options);
  cmd->add_option("--ep", a->options.ep,
                  "Execution provider of every run: cpu, webgpu, cuda, ... (the option "
                  "execution_provider; default: genai_config.json's list). A run spec overrides "
                  "it for its run, e.g. --compare seed-loop,execution_provider=cpu");
  cmd->callback([a] { RunBench(*a); });
}

}  // namespace ebb::cli
