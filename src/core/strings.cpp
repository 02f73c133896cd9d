#include "core/strings.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "ebb/error.h"

namespace ebb::internal {

std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
  size_t best = SIZE_MAX;
  std::string_view best_word;
  for (const auto c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  if (best_word.empty() || best > std::max<size_t>(2, word.size() / 3)) return "";
  return " (did you mean '" + std::string(best_word) + "'?)";
}

std::vector<int32_t> ParseIntList(std::string_view s, std::string_view what) {
  std::vector<int32_t> out;
  for (const auto& part : Split(s, ',')) {
    const std::string t = Trim(part);
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || p != t.data() + t.size() || v < INT32_MIN ||
        v > INT32_MAX) {
      throw Error(ErrorCode::InvalidArgument,
                  std::string(what) + ": '" + t + "' is not an integer; write ids like 1,2,3");
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else if (bytes < (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  }
  return buf;
}

std::string FormatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

}  // namespace ebb::internal
