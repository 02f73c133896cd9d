// UTF-8 helpers for the tokenizer: validation, decoding, encoding and the lossy conversion
// that matches Rust's String::from_utf8_lossy (one U+FFFD per maximal invalid subpart).
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ebb::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Returns the byte offset of the first invalid UTF-8 sequence in `s`, or npos when valid.
size_t FindInvalidUtf8(std::string_view s);

// Length of the UTF-8 sequence that starts with lead byte `c` (1 for ASCII and for bytes that
// cannot start a sequence). Only meaningful on valid UTF-8.
inline size_t Utf8SeqLen(unsigned char c) {
  if (c < 0x80) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  return 4;
}

// Decodes the code point at s[i] (valid UTF-8 assumed) and advances i past it.
inline char32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  if (c0 < 0x80) {
    ++i;
    return c0;
  }
  if (c0 < 0xE0) {
    char32_t cp = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    i += 2;
    return cp;
  }
  if (c0 < 0xF0) {
    char32_t cp = ((c0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                  (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    i += 3;
    return cp;
  }
  char32_t cp = ((c0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
                ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) |
                (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
  i += 4;
  return cp;
}

// Code point that ends at s[end) (valid UTF-8 assumed); sets `start` to its first byte.
char32_t PrevCodePoint(std::string_view s, size_t end, size_t& start);

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value).
void AppendUtf8(std::string& out, char32_t cp);

// Number of code points in valid UTF-8 `s`.
size_t CountCodePoints(std::string_view s);

// Converts arbitrary bytes to valid UTF-8 like Rust's String::from_utf8_lossy.
void AppendUtf8Lossy(std::string& out, std::string_view bytes);
inline std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  AppendUtf8Lossy(out, bytes);
  return out;
}

}  // namespace ebb::tok
