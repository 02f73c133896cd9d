#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

inline bool IsCont(unsigned char c) { return (c & 0xC0) == 0x80; }

// The bytes a sequence led by `b0` may have in second place (Unicode table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF).
inline bool SecondByteOk(unsigned char b0, int b1) {
  if (b1 < 0) return false;
  if (b0 == 0xE0) return b1 >= 0xA0 && b1 <= 0xBF;
  if (b0 == 0xED) return b1 >= 0x80 && b1 <= 0x9F;
  if (b0 == 0xF0) return b1 >= 0x90 && b1 <= 0xBF;
  if (b0 == 0xF4) return b1 >= 0x80 && b1 <= 0x8F;
  return b1 >= 0x80 && b1 <= 0xBF;
}

// Length of the valid sequence at s[i], or 0 with `bad` set to the length of the maximal
// invalid subpart (as Rust's Utf8Chunks computes it).
size_t ValidSeqAt(std::string_view s, size_t i, size_t& bad) {
  const size_t n = s.size();
  const auto b0 = static_cast<unsigned char>(s[i]);
  bad = 1;
  if (b0 < 0x80) return 1;
  auto at = [&](size_t k) -> int { return i + k < n ? static_cast<unsigned char>(s[i + k]) : -1; };
  size_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) len = 2;
  if (b0 >= 0xE0 && b0 <= 0xEF) len = 3;
  if (b0 >= 0xF0 && b0 <= 0xF4) len = 4;
  if (len == 0 || !SecondByteOk(b0, at(1))) return 0;
  // The maximal invalid subpart ends before the first byte that cannot continue the sequence.
  for (size_t k = 2; k < len; ++k) {
    const int b = at(k);
    if (b < 0 || !IsCont(static_cast<unsigned char>(b))) {
      bad = k;
      return 0;
    }
  }
  return len;
}

}  // namespace

size_t FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad;
    size_t len = ValidSeqAt(s, i, bad);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

char32_t PrevCodePoint(std::string_view s, size_t end, size_t& start) {
  start = end - 1;
  while (start > 0 && IsCont(static_cast<unsigned char>(s[start]))) --start;
  size_t i = start;
  return NextCodePoint(s, i);
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += !IsCont(static_cast<unsigned char>(c));
  return n;
}

void AppendUtf8Lossy(std::string& out, std::string_view bytes) {
  size_t i = 0;
  const size_t n = bytes.size();
  out.reserve(out.size() + n);
  size_t run = 0;  // start of the current valid run
  while (i < n) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad;
    size_t len = ValidSeqAt(bytes, i, bad);
    if (len != 0) {
      i += len;
      continue;
    }
    out.append(bytes.substr(run, i - run));
    out.append(kReplacementUtf8);
    i += bad;
    run = i;
  }
  out.append(bytes.substr(run));
}

}  // namespace ebb::tok
