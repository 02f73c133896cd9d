// A self-contained SVG chart of `ebb bench` runs, for bug reports: six panels over the iteration
// index — RSS, anonymous memory (RssAnon + VmSwap), KV reserved, ORT arena TotalAllocated (all
// sampled after each iteration, MiB), TTFT (ms) and TPS (tokens/s) — one coloured line per run,
// a legend with each run's RSS slope, warm-up iterations shaded. No external fonts, scripts or
// images; valid XML.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_runner.h"

namespace ebb::bench {

std::string RenderSvgChart(const std::vector<RunResult>& runs, const BenchOptions& options);

}  // namespace ebb::bench
