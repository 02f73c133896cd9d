// The JSON report of `ebb bench` (schema: docs/bench_schema.md, docs/bench.schema.json).
// Bump kBenchSchemaVersion on any change that is not a pure addition of an optional field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_runner.h"
#include "bench/environment.h"

namespace ebb::bench {

inline constexpr int kBenchSchemaVersion = 1;

nlohmann::ordered_json ReportJson(const Environment& env, const BenchOptions& options,
                                  const std::vector<RunResult>& runs);

// Writes `text` to `path` ("-": stdout). Throws ebb::Error(InvalidArgument) naming `flag` and the
// path when the file cannot be written.
void WriteTextFile(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace ebb::bench
