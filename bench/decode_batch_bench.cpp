// Aggregate decode throughput of N concurrent greedy requests on one model, with batched decode
// (decode_batch.max_rows) on and off, alternated in one process (docs/benchmarks.md):
//   decode_batch_bench MODEL_DIR [--streams 4] [--prompt 128] [--gen 64] [--repeats 3]
//                                [--rows 4] [--policy gather] [--wait-us 2000]
// Each round runs, on a model loaded without and one loaded with batching: 1 stream, then N
// streams. A stream appends its prompt and samples its first token, then waits at a barrier
// until every stream has; the decode phase (gen - 1 tokens per stream) is timed from the barrier
// to the last stream's end: aggregate tok/s = streams x (gen - 1) / that time. Prints one line
// per run and the medians; the batched runs check that every stream's tokens equal the
// unbatched run's (greedy).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "generate/decode_batcher.h"
#include "model/model_views.h"

namespace {

using Clock = std::chrono::steady_clock;
using Tokens = std::vector<int32_t>;

struct Args {
  std::string model;
  int streams = 4;
  int prompt = 128;
  int gen = 64;
  int repeats = 3;
  int rows = 4;
  std::string policy = "gather";
  std::string wait_us = "2000";
  std::vector<std::string> session_options;  // K=V, applied to both models
};

// Rows per batched Run() so far (the batcher's counters).
double RowsPerStep(ebb::Model& model) {
  const auto b = ebb::internal::RunView(model).decode_batcher();
  if (!b || b->steps() == 0) return 0;
  return static_cast<double>(b->stepped_rows()) / static_cast<double>(b->steps());
}

Tokens Prompt(int len, int seed, int vocab) {
  Tokens t;
  for (int i = 0; i < len; ++i) t.push_back(10 + (seed * 7919 + i * 131) % (vocab - 20));
  return t;
}

// Returns the aggregate decode tok/s; `out` receives each stream's sequence.
double RunOnce(const std::shared_ptr<ebb::Model>& model, const Args& a, int streams,
               std::vector<Tokens>* out) {
  std::barrier sync(streams + 1);
  std::vector<Tokens> seqs(streams);
  std::vector<std::thread> threads;
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&, s] {
      ebb::GeneratorParams p;
      p.max_length = a.prompt + a.gen;
      if (const char* ml = std::getenv("EBB_BATCH_BENCH_MAX_LENGTH")) p.max_length = std::atoi(ml);
      ebb::Generator g(model, p);
      g.AppendTokens(Prompt(a.prompt, s + 1, model->info().vocab_size));
      g.GenerateNextToken();
      sync.arrive_and_wait();
      for (int i = 1; i < a.gen && !g.done(); ++i) g.GenerateNextToken();
      auto seq = g.sequence(0);
      seqs[s].assign(seq.begin(), seq.end());
    });
  }
  sync.arrive_and_wait();
  const auto t0 = Clock::now();
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t tokens = 0;
  for (const auto& s : seqs) tokens += s.size() - static_cast<size_t>(a.prompt) - 1;
  if (out != nullptr) *out = std::move(seqs);
  return static_cast<double>(tokens) / secs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--streams") {
      a.streams = std::atoi(next().c_str());
    } else if (k == "--prompt") {
      a.prompt = std::atoi(next().c_str());
    } else if (k == "--gen") {
      a.gen = std::atoi(next().c_str());
    } else if (k == "--repeats") {
      a.repeats = std::atoi(next().c_str());
    } else if (k == "--rows") {
      a.rows = std::atoi(next().c_str());
    } else if (k == "--policy") {
      a.policy = next();
    } else if (k == "--wait-us") {
      a.wait_us = next();
    } else if (k == "--session-option") {
      a.session_options.push_back(next());
    } else if (a.model.empty() && k[0] != '-') {
      a.model = k;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.model.empty() || a.streams < 1 || a.gen < 2 || a.prompt < 1 || a.repeats < 1) {
    std::fprintf(stderr,
                 "usage: decode_batch_bench MODEL_DIR [--streams N] [--prompt T] [--gen T] "
                 "[--repeats R] [--rows R] [--policy gather|no-wait] [--wait-us US]\n");
    return 2;
  }
  try {
    ebb::ModelOptions common;
    for (const auto& kv : a.session_options) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--session-option needs K=V\n");
        return 2;
      }
      common.Set("session_options." + kv.substr(0, eq), kv.substr(eq + 1));
    }
    auto off = ebb::LoadModel(a.model, common);
    ebb::ModelOptions mo = common;
    mo.Set("decode_batch.max_rows", std::to_string(a.rows));
    mo.Set("decode_batch.policy", a.policy);
    mo.Set("decode_batch.max_wait_us", a.wait_us);
    auto on = ebb::LoadModel(a.model, mo);
    std::map<std::string, std::vector<double>> results;
    bool identical = true;
    for (int r = 0; r < a.repeats; ++r) {
      std::vector<Tokens> ref, got;
      const double off1 = RunOnce(off, a, 1, nullptr);
      const double offn = RunOnce(off, a, a.streams, &ref);
      const double onn = RunOnce(on, a, a.streams, &got);
      const double on1 = RunOnce(on, a, 1, nullptr);
      identical = identical && got == ref;
      for (size_t k = 0; k < got.size() && k < ref.size(); ++k) {
        size_t i = 0;
        while (i < got[k].size() && i < ref[k].size() && got[k][i] == ref[k][i]) ++i;
        if (i < got[k].size() || i < ref[k].size()) {
          std::printf("  stream %zu: first difference at token %zu of %zu\n", k, i, ref[k].size());
        }
      }
      if (std::getenv("EBB_BATCH_BENCH_REF") != nullptr) {
        // The batch_size = N generator (one right-padded batch, M = N kernels) for comparison.
        ebb::GeneratorParams p;
        p.max_length = a.prompt + a.gen;
        p.batch_size = a.streams;
        ebb::Generator g(off, p);
        std::vector<Tokens> rows;
        for (int k = 0; k < a.streams; ++k)
          rows.push_back(Prompt(a.prompt, k + 1, off->info().vocab_size));
        g.AppendTokens(rows);
        for (int i = 0; i < a.gen && !g.done(); ++i) g.GenerateNextToken();
        for (int k = 0; k < a.streams; ++k) {
          auto sq = g.sequence(k);
          Tokens t(sq.begin(), sq.end());
          size_t i = 0;
          while (i < t.size() && i < ref[k].size() && t[i] == ref[k][i]) ++i;
          std::printf("  batch_size generator row %d vs solo: first difference at %zu (%s)\n", k, i,
                      t == ref[k] ? "identical" : "differs");
        }
      }
      std::printf(
          "round %d: off 1 stream %.1f tok/s, off %d streams %.1f; on %d streams %.1f, on 1 "
          "stream %.1f%s\n",
          r + 1, off1, a.streams, offn, a.streams, onn, on1, got == ref ? "" : " (TOKENS DIFFER)");
      std::fflush(stdout);
      results["off1"].push_back(off1);
      results["offn"].push_back(offn);
      results["onn"].push_back(onn);
      results["on1"].push_back(on1);
    }
    const double base = Median(results["off1"]);
    std::printf(
        "median aggregate decode tok/s (prompt %d, %d generated, %d rounds):\n"
        "  1 stream, batching off: %.1f\n  1 stream, batching on:  %.1f\n"
        "  %d streams, off:        %.1f (%.2fx one stream)\n"
        "  %d streams, on:         %.1f (%.2fx one stream)\n"
        "  batched tokens identical to unbatched: %s\n"
        "  rows per batched Run(): %.2f\n",
        a.prompt, a.gen, a.repeats, base, Median(results["on1"]), a.streams,
        Median(results["offn"]), Median(results["offn"]) / base, a.streams, Median(results["onn"]),
        Median(results["onn"]) / base, identical ? "yes" : "NO", RowsPerStep(*on));
    return identical ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
