// `ebb demo MODEL_DIR`: what `make run` shows, ebb's memory story in under a minute on any model
// folder (the embedded random-weights demo model by default):
//   1. the seed loop: the model and its parameters kept alive, a Generator created, run and
//      destroyed per request, beside a plain ORT loop on the same model and the same prompts;
//      RSS after every request as a terminal chart and an SVG (the bench's six-panel chart), with
//      each run's slope;
//   2. Tier 2: one long request grows ORT's arena, ShrinkArena() hands it back, no reload;
//   3. one generation, labelled as random weights where the folder was synthesized, printed as
//      valid UTF-8 only;
// and ends with what was shown and where to go next. docs/memory.md#the-first-run explains the
// figures and what the plain ORT loop is (and is not).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_runner.h"
#include "bench/prompts.h"
#include "bench/report_json.h"
#include "bench/scenarios.h"
#include "bench/svg_chart.h"
#include "bench/terminal_chart.h"
#include "cli/commands.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "model/genai_config.h"
#include "platform/process.h"

namespace ebb::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// A slope under one page per request is "flat": a leak moves RSS at every request, by at least a
// page; heap settling moves it in a few discrete steps (see rss_steps).
constexpr double kFlatBytesPerIteration = 4096;

struct DemoArgs {
  std::string dir;
  int iterations = 30;
  int warmup = 3;
  int gen_tokens = 16;
  std::string plot = "ebb-memory.svg";
  std::string prompt = "Once upon a time";
};

double MiB(double bytes) { return bytes / kMiB; }

std::string Fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a);
  return buf;
}

// Bytes per iteration, in B or KiB, signed.
std::string Slope(double bytes) {
  return std::fabs(bytes) < 1024 ? Fmt("%+.0f B", bytes) : Fmt("%+.1f KiB", bytes / 1024);
}

// `text` with every byte that is not part of a valid, printable UTF-8 sequence, every U+FFFD
// (what the decoder shows for bytes that form no character) and every control character but
// newline shown as '?': a random model's tokens never reach the terminal as invalid UTF-8.
std::string PrintableUtf8(const std::string& text) {
  std::string out;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= n;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values above U+10FFFF are invalid UTF-8.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    if (cp == 0xFFFD || (cp < 0x20 && cp != '\n') || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      out += '?';
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  return out;
}

void Progress(const bench::RunResult& run, int32_t done, int32_t total) {
  const bool tty = platform::IsTerminal(platform::StandardStream::kStderr);
  if (!tty && done != total) return;
  std::fprintf(stderr, "%s  %s: request %d/%d%s", tty ? "\r" : "", run.name.c_str(), done, total,
               tty && done < total ? "   " : "\n");
  std::fflush(stderr);
}

// The mean RSS after the measured requests.
double MeanAfter(const bench::RunResult& r) {
  double sum = 0;
  int n = 0;
  for (const auto& it : r.iterations) {
    if (it.warmup) continue;
    sum += static_cast<double>(it.after.rss_bytes);
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

// `what`: two lines (at most ~90 columns each) saying what the loop keeps and what it creates.
void PrintRun(const char* mark, const bench::RunResult& r, const char* what1, const char* what2) {
  const auto& s = r.summary;
  const bool flat = std::fabs(s.rss_slope.slope) < kFlatBytesPerIteration;
  std::printf("  %s = %s: %s\n", mark, r.engine == "ebb" ? "ebb" : "plain ORT", what1);
  std::printf("      %s\n", what2);
  std::printf("      RSS after each request: mean %.1f MiB, peak %.1f MiB\n", MiB(MeanAfter(r)),
              MiB(static_cast<double>(s.peak_rss_bytes)));
  std::printf("      slope %s +- %s per request (%d of %d steps moved): %s\n",
              Slope(s.rss_slope.slope).c_str(), Slope(s.rss_slope.slope_stderr).c_str() + 1,
              s.rss_steps.changed, s.rss_steps.intervals,
              flat ? "flat (under a 4 KiB page per request)" : "not flat");
}

void RunDemo(const DemoArgs& a) {
  const std::filesystem::path dir = a.dir;
  const internal::GenaiConfig config = internal::LoadModelFolderConfig(dir);
  if (config.is_encoder) {
    throw Error(ErrorCode::InvalidArgument,
                a.dir +
                    " is an encoder (embedding) model; ebb demo runs a decoder (e.g. "
                    "models/demo from `make demo-model`)");
  }
  const bool random = std::filesystem::exists(dir / "synth_info.json");
  std::printf("ebb demo: the memory story on %s (%s, %d layers, vocab %d%s)\n\n", a.dir.c_str(),
              config.model_type.c_str(), config.num_hidden_layers, config.vocab_size,
              random ? "; random weights from tools/synth_model.py" : "");

  // 1. The seed loop beside the plain ORT loop, on the same prompts: bench's rag lengths (a
  // fixed pseudo-random sequence over 64..2048 tokens), the mix of sizes a server sees.
  bench::BenchOptions o;
  o.model_dir = dir;
  o.scenario = "rag";
  o.iterations = std::max(2, a.iterations);
  o.warmup = std::max(0, a.warmup);
  o.gen_tokens = std::max(1, a.gen_tokens);
  o.compare = {"naive-ort"};
  // Without the compiled-model cache: both loops hold the weights as ORT's anonymous copies, and
  // no background cache build runs beside the measurement.
  o.model_options.Set("model_cache.dir", "off");
  std::vector<int32_t> specials = config.eos_token_ids;
  if (config.bos_token_id >= 0) specials.push_back(config.bos_token_id);
  if (config.pad_token_id >= 0) specials.push_back(config.pad_token_id);
  const bench::PromptSet prompts(bench::PromptSet::Synthesize(128, config.vocab_size, specials),
                                 config.vocab_size, specials,
                                 std::max(1, config.context_length - o.gen_tokens));
  int32_t longest = 0;
  int32_t shortest = config.context_length;
  for (int32_t i = 0; i < o.warmup + o.iterations; ++i) {
    longest = std::max(longest, prompts.RagLength(i));
    shortest = std::min(shortest, prompts.RagLength(i));
  }
  std::printf(
      "1. The seed loop: %d requests (%d of them warm-up), prompts of %d to %d tokens,\n"
      "   %d generated tokens each, the same for both loops:\n",
      o.warmup + o.iterations, o.warmup, shortest, longest, o.gen_tokens);
  std::vector<bench::RunResult> runs;
  {
    const std::vector<bench::RunSpec> specs{bench::ParseRunSpec("rag", "--scenario"),
                                            bench::ParseRunSpec("naive-ort", "--compare")};
    std::deque<bench::BenchOptions> run_options;
    for (const auto& spec : specs) {
      run_options.push_back(bench::RunOptions(spec, o, "--compare"));
      auto w = bench::MakeWorkload(spec, run_options.back(), prompts);
      runs.push_back(bench::RunWorkload(*w, run_options.back(), Progress));
    }  // each workload is freed before the next runs
  }
  std::printf("\n%s", bench::RenderTerminalChart(runs, "eo", 10).c_str());
  PrintRun("e", runs[0], "the model and its parameters kept alive, a Generator per request",
           "(its KV cache is ebb's own memory, returned when the generator is destroyed)");
  PrintRun("o", runs[1], "the session kept alive; ORT allocates each request's KV cache",
           "(the presents) and activations in its CPU arena, which keeps them");
  const double held = MeanAfter(runs[1]) - MeanAfter(runs[0]);
  std::printf("  Between requests the plain ORT loop holds %.1f MiB more than ebb%s.\n", MiB(held),
              held > 0 ? ":\n  what its largest request needed" : "");
  if (!a.plot.empty()) {
    bench::WriteTextFile(a.plot, bench::RenderSvgChart(runs, o), "--plot");
    std::printf("  SVG chart (RSS, anonymous, KV, arena, TTFT, TPS per request): %s\n",
                a.plot.c_str());
  }
  runs.clear();

  // 2. Tier 2: the longest prompt in one Run (no prefill chunking) grows ORT's arena; a shrink
  // hands it back with the model loaded.
  auto model = ebb::LoadModel(dir, o.model_options);
  const int32_t long_prompt = std::max(1, std::min(2048, config.context_length) - o.gen_tokens);
  {
    GeneratorParams p;
    p.max_length = long_prompt + o.gen_tokens;
    p.prefill_chunk_size = 0;
    Generator gen(model, p);
    const std::vector<int32_t> ids =
        bench::PromptSet::Synthesize(long_prompt, config.vocab_size, specials);
    gen.AppendTokens(std::span<const int32_t>(ids));
    while (!gen.done()) gen.GenerateNextToken();
  }
  const MemoryStats before = model->runtime().Stats();
  model->runtime().ShrinkArena();
  const MemoryStats after = model->runtime().Stats();
  std::printf(
      "\n2. Tier 2: a %d-token prompt in one Run (prefill_chunk_size=0) left ORT's arena\n"
      "   holding %.1f MiB, RSS %.1f MiB. ShrinkArena(), model still loaded: arena %.1f MiB,\n"
      "   RSS %.1f MiB (%.1f MiB handed back to the OS, no reload).\n",
      long_prompt, MiB(static_cast<double>(before.cpu_arena.total_allocated_bytes)),
      MiB(static_cast<double>(before.process.rss_bytes)),
      MiB(static_cast<double>(after.cpu_arena.total_allocated_bytes)),
      MiB(static_cast<double>(after.process.rss_bytes)),
      MiB(static_cast<double>(before.process.rss_bytes - after.process.rss_bytes)));

  // 3. One generation.
  GenerateRequest req;
  req.prompt = a.prompt;
  req.max_new_tokens = 24;
  const GenerateResult r = Generate(model, req);
  std::printf("\n3. One generation, \"%s\" + %zu tokens%s:\n   %s\n", a.prompt.c_str(),
              r.rows[0].generated_ids.size(),
              random ? " - RANDOM WEIGHTS, so the text is noise by\n   design ('?' marks bytes "
                       "that form no character)"
                     : "",
              PrintableUtf8(r.rows[0].text).c_str());

  std::printf(
      "\nShown: ebb's memory stays flat while generators come and go (each gives its KV cache\n"
      "back), and Tier 2 returns ORT's arena without a reload; the plain ORT loop keeps what\n"
      "its largest request needed (docs/memory.md#the-first-run).\n"
      "Next: a real model folder (docs/models.md: ONNX Runtime's model builder):\n"
      "  ebb generate <folder> --prompt \"Hello\"\n"
      "  ebb serve --models-dir models        # OpenAI-compatible service (docs/http_api.md)\n"
      "and the tour in README.md.\n");
}

}  // namespace

void RegisterDemoCommand(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand(
      "demo",
      "The memory story (what `make run` shows): the seed loop beside a plain ORT loop, RSS per "
      "request as a chart, a Tier 2 shrink, one generation");
  cmd->add_option("MODEL_DIR", args->dir, "Decoder model folder")->required()->check(ModelDir());
  cmd->add_option("--iterations", args->iterations, "Measured requests per loop")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--warmup", args->warmup, "Warm-up requests before them")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--gen-tokens", args->gen_tokens, "Tokens generated per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--plot", args->plot, "SVG chart to write ('' : none)")->capture_default_str();
  cmd->add_option("--prompt", args->prompt, "Prompt of the final generation")
      ->capture_default_str();
  cmd->callback([args] { RunDemo(*args); });
}

}  // namespace ebb::cli
