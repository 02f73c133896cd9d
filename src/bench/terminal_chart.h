// A small plain-ASCII chart of `ebb bench` runs for a terminal: process RSS after each
// iteration (the "after" sample: the request's objects destroyed), one marker letter per run,
// iterations left to right (warm-up included, marked under the axis), MiB on the y axis. Pure
// ASCII, so it reads the same in any terminal, log file or CI page.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_runner.h"

namespace ebb::bench {

// `markers[i]` is run i's letter (runs beyond markers.size() get 'a', 'b', ...); where two runs
// share a cell the cell shows '*'. `height`: rows of the plot (at least 3). Empty runs give "".
std::string RenderTerminalChart(const std::vector<RunResult>& runs, const std::string& markers,
                                int height);

}  // namespace ebb::bench
