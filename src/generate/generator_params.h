// The one resolution and check of a generator's parameters (GeneratorParams, ebb/generator.h),
// beside GeneratorParams::Set, so that a C++ caller filling the struct and a caller of Set()
// meet the same ranges: the option table's (core/option_table.cpp).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string_view>

#include "ebb/generator.h"
#include "model/genai_config.h"

namespace ebb::internal {

// The sampling settings a generator runs with.
struct ResolvedSampling {
  bool do_sample = false;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float temperature = 1.0f;
  float repetition_penalty = 1.0f;
};

// The caller's fields over the model's search block (genai_config.json) over ebb's defaults,
// then every field of `p` checked against the option table's range (whether or not do_sample is
// set: a bad value is a bad value), logit_bias's biases included. Token ids against the
// vocabulary are the generator's check (it knows the model). Throws InvalidArgument naming the
// key and its range.
ResolvedSampling ResolveSampling(const GeneratorParams& p, const SearchDefaults& search);

// One logit_bias bias: a number from -100 to 100, else InvalidArgument naming the token
// (`id_text` as the caller wrote it). The check GeneratorParams::Set and ResolveSampling share.
float CheckLogitBias(std::string_view id_text, double bias);

}  // namespace ebb::internal
