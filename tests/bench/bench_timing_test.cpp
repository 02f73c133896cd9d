// The bench's TTFT and TPS agree with an independent measurement: the same generation (model,
// prompt, length) timed here with wall-clock stamps on every streamed token. Both sides do the
// same thing each round (load a fresh model, one warm-up request, one timed request) and are
// interleaved round by round so that load from other processes hits both alike (one intra-op
// thread each: less scheduling noise on a shared machine). The model (llama-kvloop: 32 layers)
// is slow enough that a token takes milliseconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/prompts.h"
#include "bench/scenarios.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "test_env.h"

namespace ebb::bench {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(BenchTiming, TtftAndTpsAgreeWithStampsOnStreamedTokens) {
  BenchOptions o;
  o.model_dir = ebb::testing::TestModelsDir() / "llama-kvloop";
  o.scenario = "seed-loop";
  o.iterations = 1;
  o.warmup = 1;  // each round loads a fresh model: leave its cold first request out
  o.prompt_tokens = 128;
  o.gen_tokens = 256;  // enough tokens that per-token jitter averages out (96 was not)
  o.model_options.Set("session_options.intra_op_num_threads", "1");
  auto model = Model::Load(o.model_dir, o.model_options);
  const ModelInfo& info = model->info();
  std::vector<int32_t> specials = info.eos_token_ids;
  specials.push_back(info.bos_token_id);
  specials.push_back(info.pad_token_id);
  const PromptSet prompts(PromptSet::Synthesize(o.prompt_tokens, info.vocab_size, specials),
                          info.vocab_size, specials, info.context_length - o.gen_tokens);

  // Independent: on a freshly loaded model, one warm-up generation, then one timed with a stamp
  // when each token is available.
  using Clock = std::chrono::steady_clock;
  auto generate = [&](const std::shared_ptr<Model>& m, double& ttft_s, double& tps, int& n) {
    GeneratorParams gp;
    gp.max_length = o.prompt_tokens + o.gen_tokens;
    std::vector<Clock::time_point> stamps;
    const Clock::time_point start = Clock::now();
    {
      Generator g(m, gp);
      g.AppendTokens(prompts.base());
      while (static_cast<int>(stamps.size()) < o.gen_tokens && !g.IsDone()) {
        g.GenerateNextToken();
        stamps.push_back(Clock::now());
      }
    }
    n = static_cast<int>(stamps.size());
    ttft_s = std::chrono::duration<double>(stamps.front() - start).count();
    tps = (n - 1) / std::chrono::duration<double>(stamps.back() - stamps.front()).count();
  };
  auto independent = [&](double& ttft_s, double& tps, int& n) {
    auto fresh = Model::Load(o.model_dir, o.model_options);
    generate(fresh, ttft_s, tps, n);  // warm-up, like the bench's --warmup 1
    generate(fresh, ttft_s, tps, n);
  };

  std::vector<double> bench_ttft, ind_ttft, bench_tps, ind_tps;
  double t = 0, r = 0;
  int n = 0;
  generate(model, t, r, n);  // process warm-up: first-run costs out of both
  ASSERT_GE(n, 2) << "the model produced EOS at once; pick another prompt";
  for (int round = 0; round < 9; ++round) {
    auto w = MakeWorkload(ParseRunSpec("seed-loop", "run"), o, prompts);
    const RunResult run = RunWorkload(*w, o);
    ASSERT_EQ(run.iterations.size(), 2u);
    const RequestTiming& timing = run.iterations[1].timing;
    EXPECT_EQ(timing.generated_tokens, n);
    bench_ttft.push_back(timing.ttft_s);
    bench_tps.push_back(timing.tps);
    independent(t, r, n);
    ind_ttft.push_back(t);
    ind_tps.push_back(r);
  }
  // The better half of the rounds on each side (fastest TTFTs, highest TPS), and its median:
  // interference from other processes only ever slows a round down, so the better rounds are
  // the undisturbed ones; taking their median, not the single best, keeps one lucky round on one
  // side from deciding. (Medians of all rounds, and the single best, both failed under CI-like
  // load.)
  auto better_half_median = [](std::vector<double> v, bool higher_is_better) {
    std::sort(v.begin(), v.end());
    if (higher_is_better) std::reverse(v.begin(), v.end());
    v.resize((v.size() + 1) / 2);
    return Median(v);
  };
  const double ttft_x = better_half_median(bench_ttft, false) / better_half_median(ind_ttft, false);
  const double tps_x = better_half_median(bench_tps, true) / better_half_median(ind_tps, true);
  std::printf(
      "bench/independent, better half of %zu rounds: ttft x%.3f, tps x%.3f (medians: x%.3f, "
      "x%.3f)\n",
      bench_ttft.size(), ttft_x, tps_x, Median(bench_ttft) / Median(ind_ttft),
      Median(bench_tps) / Median(ind_tps));
  EXPECT_NEAR(ttft_x, 1.0, 0.10) << "bench ttft p50 " << Median(bench_ttft) << " s, independent "
                                 << Median(ind_ttft) << " s";
  EXPECT_NEAR(tps_x, 1.0, 0.10) << "bench tps p50 " << Median(bench_tps) << ", independent "
                                << Median(ind_tps);
}

}  // namespace
}  // namespace ebb::bench
