#include "ebb/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"

namespace ebb {

std::string_view KvModeName(KvMode mode) { return mode == KvMode::kStatic ? "static" : "dynamic"; }

KvMode ParseKvMode(std::string_view name) {
  if (name == "static") return KvMode::kStatic;
  if (name == "dynamic") return KvMode::kDynamic;
  throw Error(ErrorCode::InvalidArgument,
              "kv_cache.mode='" + std::string(name) + "' is not a KV mode; use static or dynamic");
}

uint64_t ParseByteSize(std::string_view text, std::string_view what) {
  const std::string s = internal::Trim(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string num = s.substr(0, i);
  std::string unit = internal::Trim(s.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::vector<std::pair<std::string, double>> kUnits = {{"", 1},
                                                                     {"b", 1},
                                                                     {"k", 1024},
                                                                     {"kib", 1024},
                                                                     {"kb", 1e3},
                                                                     {"m", 1 << 20},
                                                                     {"mib", 1 << 20},
                                                                     {"mb", 1e6},
                                                                     {"g", 1 << 30},
                                                                     {"gib", 1 << 30},
                                                                     {"gb", 1e9},
                                                                     {"t", 1099511627776.0},
                                                                     {"tib", 1099511627776.0},
                                                                     {"tb", 1e12}};
  double mult = -1;
  for (const auto& [u, m] : kUnits) {
    if (u == unit) mult = m;
  }
  char* end = nullptr;
  const double value = num.empty() ? -1 : std::strtod(num.c_str(), &end);
  if (mult < 0 || num.empty() || end != num.c_str() + num.size() || !std::isfinite(value) ||
      value < 0) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + "='" + std::string(text) +
                    "' is not a size; write bytes (1048576) or a unit: 512MiB, 2GiB, 1.5GB");
  }
  const auto too_large = [&] {
    return Error(ErrorCode::InvalidArgument,
                 std::string(what) + "='" + std::string(text) +
                     "' is too large: the largest size is 18446744073709551615 bytes (16 EiB)");
  };
  // Whole numbers are converted exactly (a double has 53 bits); others are rounded, and must be
  // below 2^64 before rounding, so the conversion cannot overflow.
  if (num.find('.') == std::string::npos) {
    uint64_t n = 0;
    const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec == std::errc::result_out_of_range) throw too_large();
    const uint64_t m = static_cast<uint64_t>(mult);
    if (ec == std::errc() && p == num.data() + num.size() && static_cast<double>(m) == mult) {
      if (m != 0 && n > UINT64_MAX / m) throw too_large();
      return n * m;
    }
  }
  const double bytes = std::round(value * mult);
  if (bytes >= 18446744073709551616.0) throw too_large();  // 2^64
  return static_cast<uint64_t>(bytes);
}

void ModelOptions::Set(std::string_view key, std::string_view value) {
  const std::string k(key);
  const std::string v(value);
  auto after = [&](std::string_view prefix) { return k.substr(prefix.size()); };
  if (k.starts_with("session_options.") && k.size() > 16) {
    const std::string name = after("session_options.");
    // Typed session keys are checked now, so a bad value fails at Set, not at load.
    if (const OptionSpec* spec = FindOption(name); spec && HasScope(*spec, OptionScope::kSession)) {
      internal::ValidateOptionValue(*spec, v);
    }
    session_options[name] = v;
    return;
  }
  if (k.starts_with("run_options.") && k.size() > 12) {
    // Checked now, as ModelControls::SetRunOption checks it: a key ORT cannot take (or that no
    // JSON can show, such as invalid UTF-8) fails this call, not the load or a later stats call.
    internal::CheckRunOptionEntry(after("run_options."), v);
    run_options[after("run_options.")] = v;
    return;
  }
  if (k.starts_with("provider_options.")) {
    const std::string rest = after("provider_options.");
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size()) {
      throw Error(ErrorCode::InvalidArgument, "provider option '" + k +
                                                  "' must be written provider_options.EP.KEY, "
                                                  "e.g. provider_options.cuda.gpu_mem_limit");
    }
    provider_options[rest.substr(0, dot)][rest.substr(dot + 1)] = v;
    return;
  }
  const OptionSpec* spec = FindOption(k);
  if (spec == nullptr) {
    internal::ThrowUnknownKey(k, OptionScope::kModel,
                              "ORT keys go under session_options., run_options. or "
                              "provider_options.EP.");
  }
  if (!HasScope(*spec, OptionScope::kModel)) internal::ThrowWrongScope(*spec, OptionScope::kModel);
  internal::ValidateOptionValue(*spec, v);
  // An integer key's value: its range is the table row's, which ValidateOptionValue just
  // checked (written once, in the row).
  const auto table_int = [&] { return internal::ParseInt(k, v, INT64_MIN, INT64_MAX); };
  if (k == "kv_cache.mode") {
    kv_mode = ParseKvMode(v);
  } else if (k == "kv_cache.max_bytes") {
    kv_max_bytes = ParseByteSize(v, k);
  } else if (k == "kv_cache.retain_bytes") {
    kv_retain_bytes = ParseByteSize(v, k);
  } else if (k == "prefix_cache.max_bytes") {
    prefix_cache_max_bytes = ParseByteSize(v, k);
  } else if (k == "constraint_cache.max_bytes") {
    constraint_cache_max_bytes = ParseByteSize(v, k);
  } else if (k == "kv_cache.chunk_tokens") {
    kv_chunk_tokens = static_cast<int32_t>(table_int());
  } else if (k == "prefill_chunk_size") {
    prefill_chunk_size = static_cast<int32_t>(table_int());
  } else if (k == "decode_batch.max_rows") {
    decode_batch_max_rows = static_cast<int32_t>(table_int());
  } else if (k == "decode_batch.policy") {
    decode_batch_no_wait = internal::Trim(v) == "no-wait";  // the table checked the value
  } else if (k == "decode_batch.max_wait_us") {
    decode_batch_max_wait_us = static_cast<int32_t>(table_int());
  } else if (k == "decode_batch.prefill_chunk") {
    decode_batch_prefill_chunk = static_cast<int32_t>(table_int());
  } else if (k == "memory.limit") {
    memory_limit_bytes = ParseByteSize(v, k);
  } else if (k == "memory.shrink_every") {
    shrink_every = static_cast<uint32_t>(table_int());
  } else if (k == "memory.shrink_above") {
    shrink_above_bytes = ParseByteSize(v, k);
  } else if (k == "memory.release_file_pages") {
    release_file_pages = internal::ParseBool(k, v);
  } else if (k == "cpu_ops") {
    cpu_ops = internal::Trim(v);  // the table checked the value
  } else if (k == "prefill_logits") {
    last_position_logits = internal::Trim(v) == "last";
  } else if (k == "model_cache.dir") {
    model_cache_dir = internal::Trim(v);
    if (model_cache_dir.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "model_cache.dir='' names no folder; use auto (the default), off, or a folder");
    }
  } else if (k == "model_cache.max_bytes") {
    model_cache_max_bytes = ParseByteSize(v, k);
  } else if (k == "memory.release_weights_after_s") {
    release_weights_after_s = static_cast<int32_t>(table_int());
  } else if (k == "memory.release_weights_on_pressure") {
    release_weights_on_pressure = internal::ParseBool(k, v);
  } else if (k == "memory.pressure_cgroup") {
    pressure_cgroup = internal::Trim(v);
    if (pressure_cgroup.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "memory.pressure_cgroup='' names no cgroup; use auto (the default), machine, or "
                  "a cgroup folder such as /sys/fs/cgroup/system.slice/ebb.service");
    }
  } else if (k == "chat_template") {
    if (internal::Trim(v).empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "chat_template='' names no template; give a Jinja file (or the template text)");
    }
    chat_template = v;  // parsed when the model loads (it needs the folder's special tokens)
  } else if (k == "execution_provider") {
    execution_provider = internal::Trim(v);  // checked against ORT when the model loads
  } else {
    throw Error(ErrorCode::Internal, "option table row '" + k + "' has no ModelOptions field");
  }
}

}  // namespace ebb
