// The JSON values of ebb's figures: one builder per document, shared by every surface.
//
// The public ToJson/InfoJson overloads (ebb/json.h) return the text of these values, and the C
// ABI passes that text on; the CLI and the service, inside the library, use the values
// themselves. The Python package is built on the public API alone (tools/check_layers.py), so it
// reads the text; no field is named in two places. Field names are the structs' (snake_case); the
// documents' schema is docs/runtime.schema.json. Thread-safety: pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"

namespace ebb::internal {

// Ordered: the fields keep the order of their structs on every surface.
using StatsJson = nlohmann::ordered_json;

StatsJson ProcessMemoryJson(const ProcessMemory& p);
StatsJson KvStatsJson(const KvStats& kv);
// A model's (or a runtime's summed) DeviceMemory (docs/runtime.schema.json#/$defs/device_memory).
StatsJson DeviceMemoryJson(const DeviceMemory& d);
StatsJson ArenaStatsJson(const ArenaStats& a);
StatsJson WeightsMemoryJson(const WeightsMemory& w);
StatsJson PrefixCacheStatsJson(const PrefixCacheStats& c);
StatsJson PrefixPinJson(const PrefixPin& p);
StatsJson DecodeBatchStatsJson(const DecodeBatchStats& d);
// A model's or a runtime's MemoryStats: process, kv, device, cpu_arena, num_shrinks, num_requests,
// policies {shrink_every, shrink_above_bytes, ort_shrink_every_run}, weights_bytes, weights,
// prefix_cache, constraints, decode_batch, limit_bytes, used_bytes
// (docs/runtime.schema.json#/$defs/memory_stats).
StatsJson MemoryStatsJson(const MemoryStats& s);
StatsJson WeightsReleaseJson(const WeightsRelease& r);
// One entry of Runtime::List(): id, path, type, is_encoder, weights_bytes, weights, kv, device,
// cpu_arena, live_generators, requests_served, last_used_unix_ms.
StatsJson ModelSummaryJson(const ModelSummary& s);
StatsJson ModelSummariesJson(const std::vector<ModelSummary>& models);
// What a model is: id, path, weights_bytes and every ModelInfo field (ebb::InfoJson).
StatsJson ModelInfoJson(const Model& model);
// A generator's (or a generation's) counters, named as in GeneratorStats.
StatsJson GeneratorStatsJson(const GeneratorStats& s);
// One sampled token's log-probabilities: {"id", "token", "logprob", "top_logprobs": [{"id",
// "token", "logprob"}]}. "token" is Decode([id]) with special tokens shown, U+FFFD when the
// tokenizer lacks the id, "" without a tokenizer (`tok` may be null; not owned).
StatsJson TokenLogprobsJson(const TokenLogprobs& lp, const Tokenizer* tok);
// A generation's result: {"rows": [{"text", "prompt_ids", "ids" (generated, EOS included),
// "finish_reason", "logprobs" (a list with `logprobs`, else null), "undecodable_tokens"}],
// "usage": {"prompt_tokens", "completion_tokens"}, "stats" (GeneratorStatsJson), "max_length",
// "error": null or {"code" (ErrorCodeName), "message"}}. The CLI's `generate --json` and the
// Python SDK's result dicts are read from it.
StatsJson GenerateResultJson(const GenerateResult& r, const Tokenizer* tok, bool logprobs);

// The text form every public overload returns: compact, invalid UTF-8 (a path, a reason)
// replaced by U+FFFD rather than throwing.
std::string DumpStatsJson(const StatsJson& j);

}  // namespace ebb::internal
