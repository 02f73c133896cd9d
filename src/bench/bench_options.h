// The parsed options of one `ebb bench` invocation (see `ebb bench --help` and
// docs/bench_schema.md, which documents how they appear in the JSON report).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ebb/options.h"

namespace ebb::bench {

struct BenchOptions {
  std::filesystem::path model_dir;
  std::string scenario = "seed-loop";  // seed-loop | reuse | rag | rag-prefix | load-unload | embed
  int32_t iterations = 10;             // measured iterations (after the warm-up)
  int32_t warmup = 1;                  // iterations run first and left out of the summary
  int32_t process_warmup = 0;          // requests of the first run's spec before any run, discarded
  double delay_s = 0;                  // sleep between iterations
  int32_t prompt_tokens = 128;         // synthesized prompt length (rag, rag-prefix: ignored)
  int32_t prefix_tokens = 1024;        // rag-prefix: the shared prefix (cut to the context)
  int32_t question_tokens = 64;        // rag-prefix: the question after it, new every iteration
  std::filesystem::path prompt_file;   // empty: synthesize token ids
  int32_t gen_tokens = 32;             // tokens to generate per sequence (fewer on EOS)
  int32_t batch = 1;                   // sequences per request (embed: texts per request)
  std::optional<KvMode> kv_mode;       // unset: the model's kv_cache.mode
  int32_t shrink_every = 0;            // 0: never; N: Workload::Shrink() after every N-th
  std::vector<std::string> compare;    // extra runs: run specs (scenarios.h), e.g. naive-ort
  ModelOptions model_options;  // from --session-option/--provider-option/--run-option/--option
  // embed.* request keys (from --option or a run spec's overrides), in order; applied with
  // EmbedRequest::Set to every request of an embed run. embed.batch_size is also the naive
  // embedding loop's rows per Run().
  std::vector<std::pair<std::string, std::string>> embed_options;
  // Structured output (--json-schema FILE, --regex RE, --grammar FILE): the request key and its
  // text; applied to the runs whose spec says constrained=true (so that a run with and one
  // without a constraint compare side by side in one process).
  std::string constraint_key;
  std::string constraint_text;
  bool constrained = false;  // this run applies the constraint (a spec's constrained=true)
  std::vector<std::string> option_flags;       // the raw option flags, for the report
  std::string json_path, csv_path, plot_path;  // "" : not written; json "-" : stdout

  // Whether a run is rag-prefix: --scenario rag-prefix, or a --compare spec based on it.
  bool UsesRagPrefix() const {
    if (scenario == "rag-prefix") return true;
    for (const auto& c : compare) {
      if (c.substr(0, c.find(',')) == "rag-prefix") return true;
    }
    return false;
  }
};

}  // namespace ebb::bench
