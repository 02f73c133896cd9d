// ProbeOutputs — one fixed, deterministic Run() of a model's session, for checking that two
// sessions of the same model compute the same thing (a compiled-model cache entry against the
// normal load it was built from; model_cache.h).
//
// The input: 8 tokens (fixed ids below the vocabulary size), attention mask of ones, positions
// 0..7, an empty past (sequence length 0) for every KV input, or, for a graph whose KV is one
// shared past/present buffer (`shared_kv`, GroupQueryAttention with past_present_share_buffer,
// as the generator binds it), zeroed buffers of 8 positions bound as both; and for a graph
// rewritten for last-position logits the index of the last position. For an encoder: the same ids,
// a mask of ones and zero token types. The output: the logits (decoders) or the first hidden-state
// output (encoders) as float32, with ORT allocating every output. Thread-safety: Run() on an
// Ort::Session is thread-safe, so a probe may run on a session that is serving requests.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <vector>

#include "model/genai_config.h"
#include "model/model_impl.h"

namespace ebb::internal {

// Throws Ort::Exception from Run(), or ebb::Error for a graph it cannot feed.
std::vector<float> ProbeOutputs(Ort::Session& session, const GenaiConfig& cfg, const DecoderIo& io,
                                const EncoderIo& encoder, bool shared_kv);

// "" when `a` and `b` agree (same size, no NaN or infinity, every element within
// 1e-5 * (1 + |a|)); else what differs, for a log line.
std::string CompareProbeOutputs(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ebb::internal
