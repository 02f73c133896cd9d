// ebb/json.h — ebb's figures and results as JSON text: one form per struct, shared by every
// surface (the C ABI returns it, the CLI prints it, the service and the Python package serve it).
//
// Field names are the structs' (snake_case); the documents' schema is docs/runtime.schema.json.
// Each function returns the text of the one JSON value the library builds for that struct
// (src/runtime/stats_json.h), compact, with invalid UTF-8 (a path, a reason) replaced by U+FFFD
// rather than throwing. In the runtime band: a model's info and the runtime's list need both.
// Thread-safety: pure functions of their arguments (a Model's info is immutable).
#pragma once

#include <string>
#include <vector>

#include "ebb/export.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"

namespace ebb {

// A model's or a runtime's MemoryStats: process, kv, device, cpu_arena, num_shrinks,
// num_requests, policies {shrink_every, shrink_above_bytes, ort_shrink_every_run}, weights_bytes,
// weights, prefix_cache, constraints, limit_bytes, used_bytes
// (docs/runtime.schema.json#/$defs/memory_stats).
EBB_API std::string ToJson(const MemoryStats& stats);
EBB_API std::string ToJson(const WeightsRelease& release);
EBB_API std::string ToJson(const PrefixPin& pin);
// Runtime::List() as one JSON array, the fields named as in ModelSummary and ToJson(MemoryStats);
// the service's model entries carry the same objects.
EBB_API std::string ToJson(const std::vector<ModelSummary>& models);
// A generator's (or a generation's) counters, named as in GeneratorStats.
EBB_API std::string ToJson(const GeneratorStats& stats);
// One sampled token's log-probabilities: {"id", "token", "logprob", "top_logprobs": [{"id",
// "token", "logprob"}]}. "token" is Decode([id]) with special tokens shown, U+FFFD when the
// tokenizer lacks the id, "" without a tokenizer (`tok` may be null; not owned).
EBB_API std::string ToJson(const TokenLogprobs& logprobs, const Tokenizer* tok);
// A generation's result: {"rows": [{"text", "prompt_ids", "ids" (generated, EOS included),
// "finish_reason", "logprobs" (a list when `logprobs`, else null), "undecodable_tokens"}],
// "usage": {"prompt_tokens", "completion_tokens"}, "stats", "max_length", "error": null or
// {"code" (ErrorCodeName), "message"}}. `tok` as above.
EBB_API std::string ToJson(const GenerateResult& result, const Tokenizer* tok, bool logprobs);

// One JSON object describing `model`: its id, path, weights_bytes and every ModelInfo field,
// named as in the struct. The form the C ABI (ebb_model_info_json), the Python SDK (Model.info)
// and the service (GET /v1/models/{id}/runtime "info") return.
EBB_API std::string InfoJson(const Model& model);

}  // namespace ebb
