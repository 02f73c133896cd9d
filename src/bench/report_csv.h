// The CSV report of `ebb bench`: a header row, then one row per iteration of every run.
// Absent figures (e.g. arena stats ebb cannot read yet) are empty cells. Units in the column
// names: _s seconds, _bytes bytes, tps tokens per second.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_runner.h"

namespace ebb::bench {

std::string ReportCsv(const std::vector<RunResult>& runs);

}  // namespace ebb::bench
