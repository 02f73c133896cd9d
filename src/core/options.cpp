#include "ebb/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb {
namespace {

constexpr std::array<std::string_view, 9> kEbbKeys = {
    "memory.limit",          "kv_cache.mode",         "kv_cache.max_bytes",
    "kv_cache.retain_bytes", "kv_cache.chunk_tokens", "prefill_chunk_size",
    "memory.shrink_every",   "memory.shrink_above",   "memory.release_file_pages"};

bool ParseBool(std::string_view key, std::string_view v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw Error(ErrorCode::InvalidArgument,
              std::string(key) + "='" + std::string(v) + "' is not a boolean; use true or false");
}

int32_t ParsePositiveInt(std::string_view key, std::string_view v, bool allow_zero,
                         int64_t max = INT32_MAX) {
  int64_t x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < (allow_zero ? 0 : 1) || x > max) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(key) + "='" + std::string(v) + "' is not a " +
                    (allow_zero ? "non-negative" : "positive") + " integer" +
                    (max < INT32_MAX ? " up to " + std::to_string(max) : std::string()));
  }
  return static_cast<int32_t>(x);
}

// kv_cache.chunk_tokens: larger steps only round every growth up to the whole context.
constexpr int64_t kMaxKvChunkTokens = 1 << 20;

}  // namespace

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
      value < 0 || value * mult >= 18446744073709551616.0) {  // 2^64
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + "='" + std::string(text) +
                    "' is not a size; write bytes (1048576) or a unit: 512MiB, 2GiB, 1.5GB");
  }
  // Not llround: it returns a long long, which overflows above 2^63.
  return static_cast<uint64_t>(std::round(value * mult));
}

void ModelOptions::Set(std::string_view key, std::string_view value) {
  const std::string k(key);
  const std::string v(value);
  auto after = [&](std::string_view prefix) { return k.substr(prefix.size()); };
  if (k.starts_with("session_options.") && k.size() > 16) {
    session_options[after("session_options.")] = v;
  } else if (k.starts_with("run_options.") && k.size() > 12) {
    run_options[after("run_options.")] = v;
  } else if (k.starts_with("provider_options.")) {
    const std::string rest = after("provider_options.");
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size()) {
      throw Error(ErrorCode::InvalidArgument, "provider option '" + k +
                                                  "' must be written provider_options.EP.KEY, "
                                                  "e.g. provider_options.cuda.gpu_mem_limit");
    }
    provider_options[rest.substr(0, dot)][rest.substr(dot + 1)] = v;
  } else if (k == "kv_cache.mode") {
    kv_mode = ParseKvMode(v);
  } else if (k == "kv_cache.max_bytes") {
    kv_max_bytes = ParseByteSize(v, k);
  } else if (k == "kv_cache.retain_bytes") {
    kv_retain_bytes = ParseByteSize(v, k);
  } else if (k == "kv_cache.chunk_tokens") {
    kv_chunk_tokens = ParsePositiveInt(k, v, false, kMaxKvChunkTokens);
  } else if (k == "prefill_chunk_size") {
    prefill_chunk_size = ParsePositiveInt(k, v, true);
  } else if (k == "memory.limit") {
    memory_limit_bytes = ParseByteSize(v, k);
  } else if (k == "memory.shrink_every") {
    shrink_every = static_cast<uint32_t>(ParsePositiveInt(k, v, true));
  } else if (k == "memory.shrink_above") {
    shrink_above_bytes = ParseByteSize(v, k);
  } else if (k == "memory.release_file_pages") {
    release_file_pages = ParseBool(k, v);
  } else {
    std::vector<std::string_view> known(kEbbKeys.begin(), kEbbKeys.end());
    known.insert(known.end(), {"session_options.", "run_options.", "provider_options."});
    const std::string hint = internal::DidYouMean(k, known);
    throw Error(ErrorCode::InvalidArgument,
                "unknown option '" + k + "'" + hint +
                    "; ebb's keys are kv_cache.mode, kv_cache.max_bytes, kv_cache.retain_bytes, "
                    "kv_cache.chunk_tokens, prefill_chunk_size, memory.limit, memory.shrink_every, "
                    "memory.shrink_above, memory.release_file_pages; ORT keys go under "
                    "session_options., run_options. or provider_options.EP.");
  }
}

}  // namespace ebb
