// ebb's own workloads for `ebb bench`, one per scenario:
//   seed-loop    model alive for the run; a Generator created, run and destroyed every
//                iteration (the loop users report leaks from)
//   reuse        model and one Generator alive; RewindTo(0) before every iteration (batch 1)
//   rag          like seed-loop with prompt lengths varying over 64..2048 (clamped to context)
//   load-unload  the model loaded and destroyed every iteration (load time recorded)
//   recycle:K    seed-loop, but the model is destroyed after every K-th iteration and reloaded
//                before the next (a common leak workaround, as a baseline)
// Every request sizes its generator at prompt + gen_tokens (max_length), as a server would.
// Ownership: the workload owns the model and generators; `options` and `prompts` are borrowed
// and must outlive it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_workload.h"
#include "bench/prompts.h"

namespace ebb::bench {

// The scenario names `--scenario` accepts, in help order.
const std::vector<std::string>& ScenarioNames();

// Throws ebb::Error(InvalidArgument) naming the scenario and the accepted names (with a "did you
// mean") for an unknown one.
void CheckScenarioName(const std::string& name);

// A run spec: a scenario name, "naive-ort", or "recycle:K" (K >= 1). Throws
// ebb::Error(InvalidArgument) naming `flag` for anything else.
void CheckRunSpec(const std::string& spec, const std::string& flag);

// Makes the workload of a run spec (CheckRunSpec first). `options.batch` > 1 with `reuse` is
// refused with InvalidArgument (RewindTo works on a batch of one).
std::unique_ptr<Workload> MakeWorkload(const std::string& spec, const BenchOptions& options,
                                       const PromptSet& prompts);

}  // namespace ebb::bench
