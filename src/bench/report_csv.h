// The CSV report of `ebb bench`: a header row, then one row per iteration of every run.
// Absent figures (e.g. arena stats ebb cannot read yet) are empty cells. Units in the column
// names: _s seconds, _bytes bytes, tps tokens per second. When any run has device figures (the KV
// on an accelerator), twelve columns follow the others: device_kv_in_use_bytes,
// device_kv_reserved_bytes, device_used_bytes and device_driver_process_bytes for each of
// before_, last_token_ and after_ (empty cells for a CPU run among them); a report of CPU runs
// only has none of them, so it is what it was before devices.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_runner.h"

namespace ebb::bench {

std::string ReportCsv(const std::vector<RunResult>& runs);

}  // namespace ebb::bench
