// The GPT-2 byte-level alphabet: every byte maps to one printable code point (printable
// Latin-1 bytes to themselves, the rest to U+0100…U+0143), so any byte string becomes a
// string of "byte characters". Tables are built once (thread-safe static init) and read-only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ebb::tok {

struct ByteLevelTables {
  std::array<char32_t, 256> byte_to_char;
  // UTF-8 of byte_to_char[b], 1-2 bytes, for fast appends.
  std::array<std::array<char, 2>, 256> byte_utf8;
  std::array<uint8_t, 256> byte_utf8_len;
  // Code point (< 0x144) -> byte, or -1.
  std::array<int16_t, 0x144> char_to_byte;
};

const ByteLevelTables& ByteLevel();

// Appends the byte characters of `bytes`.
void AppendByteLevel(std::string& out, std::string_view bytes);

// If every character of `token` (valid UTF-8) is a byte character, appends the bytes and
// returns true; otherwise appends nothing and returns false.
bool AppendBytesFromByteLevel(std::string& out, std::string_view token);

}  // namespace ebb::tok
