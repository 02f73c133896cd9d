// ebb's own workloads for `ebb bench`, one per scenario:
//   seed-loop    model alive for the run; a Generator created, run and destroyed every
//                iteration (the loop users report leaks from)
//   reuse        model and one Generator alive; RewindTo(0) before every iteration (batch 1)
//   rag          like seed-loop with prompt lengths varying over 64..2048 (clamped to context)
//   rag-prefix   like seed-loop; every prompt is one shared prefix (--prefix-tokens, cut to the
//                context) followed by a question of --question-tokens that is new every iteration:
//                with prefix_cache.max_bytes > 0, every request after the first takes the
//                prefix's KV from the model's prefix cache and prefills only the question
//   load-unload  the model loaded and destroyed every iteration (load time recorded)
//   recycle:K    seed-loop, but the model is destroyed after every K-th iteration and reloaded
//                before the next (a common leak workaround, as a baseline)
//   embed        an encoder model alive for the run; every iteration embeds `batch` documents of
//                mixed lengths in one ebb::Embed call (embed_workload.h); its naive-ort baseline
//                is naive_embed_loop.h
// Every request sizes its generator at prompt + gen_tokens (max_length), as a server would.
// Ownership: the workload owns the model and generators; `options` and `prompts` are borrowed
// and must outlive it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/embed_documents.h"
#include "bench/prompts.h"

namespace ebb::bench {

// The scenario names `--scenario` accepts, in help order.
const std::vector<std::string>& ScenarioNames();

// Throws ebb::Error(InvalidArgument) naming the scenario and the accepted names (with a "did you
// mean") for an unknown one.
void CheckScenarioName(const std::string& name);

// A run spec: BASE[,KEY=VALUE]... where BASE is a scenario name, "naive-ort" or "recycle:K"
// (K >= 1), and each KEY=VALUE changes one option for that run only, so that two settings can be
// compared side by side in one process:
//   shrink-every=N   the bench's own --shrink-every for this run
//   constrained=B    true: this run's requests carry the bench's constraint (--json-schema,
//                    --regex or --grammar); false (default): they do not
//   any other KEY    an ebb option key, as `--option`/`--session-option` would set it
//                    (ModelOptions::Set: kv_cache.mode, prefill_chunk_size, memory.shrink_every,
//                    session_options.enable_cpu_mem_arena, ...), or an embed.* request key
//                    (embed runs only). naive-ort takes session_options.*, run_options.* and
//                    embed.batch_size only: it has no KV pool or Tier 2 policy.
// e.g. "rag,memory.shrink_every=10", "seed-loop,prefill_chunk_size=0",
// "naive-ort,shrink-every=5".
struct RunSpec {
  std::string text;                                          // as given
  std::string base;                                          // scenario, naive-ort or recycle:K
  std::optional<int32_t> shrink_every;                       // shrink-every=N
  std::vector<std::pair<std::string, std::string>> options;  // the other KEY=VALUE, in order
};

// Parses and checks a run spec. Throws ebb::Error(InvalidArgument) naming `flag` and the bad part
// (an unknown base with a "did you mean", a malformed or unknown KEY=VALUE, a bad value).
RunSpec ParseRunSpec(const std::string& spec, const std::string& flag);

// Checks a run spec (ParseRunSpec, plus applying its options to a copy of `base`).
void CheckRunSpec(const std::string& spec, const std::string& flag, const BenchOptions& base = {});

// The options of one run: `base` with the spec's overrides applied. Throws InvalidArgument.
BenchOptions RunOptions(const RunSpec& spec, const BenchOptions& base, const std::string& flag);

// Makes the workload of a run spec. `options` are the run's own (RunOptions) and are borrowed:
// they must outlive the workload, as must `documents` (needed, and used, only by embed runs:
// the spec `embed`, and `naive-ort` when options.scenario is embed). `options.batch` > 1 with
// `reuse` is refused with InvalidArgument (RewindTo works on a batch of one).
std::unique_ptr<Workload> MakeWorkload(const RunSpec& spec, const BenchOptions& options,
                                       const PromptSet& prompts,
                                       const EmbedDocuments* documents = nullptr);

}  // namespace ebb::bench
