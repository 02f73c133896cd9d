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

}  // namespace ebb::internal

namespace ebb::internal {

std::string FormatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

std::string EscapeForMessage(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  for (; i < s.size() && out.size() < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    // Keep valid multi-byte UTF-8 sequences whole.
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    bool valid = len > 1 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (valid && c >= 0xC2) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else if (c < 0x20 || c == 0x7F || c >= 0x80 || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

std::string OneLine(std::string_view s) {
  std::string out;
  bool space = false;
  for (const char c : s) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    const size_t len = b0 >= 0xC2 && b0 <= 0xDF   ? 2
                       : b0 >= 0xE0 && b0 <= 0xEF ? 3
                       : b0 >= 0xF0 && b0 <= 0xF4 ? 4
                                                  : 0;
    if (len == 0 || i + len > n) return false;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    // Unicode table 3-7: the second byte's range depends on the first.
    const unsigned char lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
    if (b1 < lo || b1 > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace ebb::internal
