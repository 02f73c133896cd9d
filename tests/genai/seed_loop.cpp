// MLPerf Client's generation loop in genai's C++ style, as a memory-growth check:
//   seed_loop MODEL_DIR [ITERATIONS=1000] [MAX_GROWTH_BYTES_PER_ITER=1024]
//
// One model and one params object live for the whole run; every iteration creates a sequence
// batch holding a fixed prompt, a generator, generates greedily until IsDone, then destroys both
// (MLPerf's per-prompt pattern). RSS (VmRSS) is read after a warm-up of 50 iterations and again at
// the end; their difference over the measured iterations is printed as
// `rss_growth_per_iter_bytes=<double>`.
//
// Exit status: 0 when growth per iteration is at most MAX_GROWTH_BYTES_PER_ITER; 1 when it is
// larger (a leak per generation); 2 on bad arguments or a library error. The tokens of iteration 0
// are printed, so a run can also be compared with a known greedy result. Linux only (/proc).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "ort_genai.h"

namespace {

constexpr int kWarmupIterations = 50;
// Prompt + generated tokens per iteration.
constexpr double kMaxLength = 32;
// A fixed prompt. Every id is below 512, so it is valid for both small test models
// (stories260k: vocabulary 512; tiny-random-gpt2-fp32: 1000).
const std::vector<int32_t> kPrompt = {1, 52, 195, 300, 411};

// Resident set size of this process in bytes, from /proc/self/status; -1 if unreadable.
double ReadRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) * 1024.0;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [ITERATIONS] [MAX_GROWTH_BYTES_PER_ITER]\n", argv[0]);
    return 2;
  }
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 1000;
  const double max_growth = argc > 3 ? std::strtod(argv[3], nullptr) : 1024.0;
  if (iterations <= kWarmupIterations) {
    std::fprintf(stderr, "ITERATIONS must exceed the %d warm-up iterations\n", kWarmupIterations);
    return 2;
  }

  // Declared first so it is destroyed last: OgaShutdown runs after every Oga object is gone.
  OgaHandle handle;
  try {
    auto model = OgaModel::Create(argv[1]);
    auto params = OgaGeneratorParams::Create(*model);
    params->SetSearchOption("max_length", kMaxLength);
    params->SetSearchOptionBool("do_sample", false);

    double rss_after_warmup = 0;
    for (int i = 0; i < iterations; ++i) {
      auto sequences = OgaSequences::Create();
      sequences->Append(kPrompt.data(), kPrompt.size());
      auto generator = OgaGenerator::Create(*model, *params);
      generator->AppendTokenSequences(*sequences);
      while (!generator->IsDone()) generator->GenerateNextToken();

      if (i == 0) {
        // The whole sequence: prompt followed by the generated tokens.
        const int32_t* tokens = generator->GetSequenceData(0);
        const size_t count = generator->GetSequenceCount(0);
        std::printf("iteration0_tokens=");
        for (size_t t = 0; t < count; ++t) std::printf(t == 0 ? "%d" : ",%d", tokens[t]);
        std::printf("\n");
      }

      // Destroy this iteration's objects explicitly, as MLPerf does before the next prompt.
      generator.reset();
      sequences.reset();
      if (i + 1 == kWarmupIterations) rss_after_warmup = ReadRssBytes();
    }
    const double rss_end = ReadRssBytes();
    if (rss_after_warmup < 0 || rss_end < 0) {
      std::fprintf(stderr, "cannot read VmRSS from /proc/self/status\n");
      return 2;
    }

    const double growth = (rss_end - rss_after_warmup) / (iterations - kWarmupIterations);
    std::printf("rss_after_warmup_bytes=%.0f rss_end_bytes=%.0f\n", rss_after_warmup, rss_end);
    std::printf("rss_growth_per_iter_bytes=%f\n", growth);
    if (growth > max_growth) {
      std::fprintf(stderr, "RSS grows %f bytes per iteration, more than %f\n", growth, max_growth);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
