#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace ebb::tok {

const ByteLevelTables& ByteLevel() {
  static const ByteLevelTables tables = [] {
    ByteLevelTables t{};
    t.char_to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t.byte_to_char[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    for (int b = 0; b < 256; ++b) {
      std::string u;
      AppendUtf8(u, t.byte_to_char[b]);
      t.byte_utf8_len[b] = static_cast<uint8_t>(u.size());
      t.byte_utf8[b] = {u[0], u.size() > 1 ? u[1] : '\0'};
      t.char_to_byte[t.byte_to_char[b]] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return tables;
}

void AppendByteLevel(std::string& out, std::string_view bytes) {
  const ByteLevelTables& t = ByteLevel();
  size_t pos = out.size();
  out.resize(pos + bytes.size() * 2);
  char* dst = out.data() + pos;
  for (unsigned char b : bytes) {
    dst[0] = t.byte_utf8[b][0];
    dst[1] = t.byte_utf8[b][1];
    dst += t.byte_utf8_len[b];
  }
  out.resize(static_cast<size_t>(dst - out.data()));
}

bool AppendBytesFromByteLevel(std::string& out, std::string_view token) {
  const ByteLevelTables& t = ByteLevel();
  const size_t mark = out.size();
  size_t i = 0;
  while (i < token.size()) {
    char32_t c = NextCodePoint(token, i);
    if (c >= t.char_to_byte.size() || t.char_to_byte[c] < 0) {
      out.resize(mark);
      return false;
    }
    out.push_back(static_cast<char>(t.char_to_byte[c]));
  }
  return true;
}

}  // namespace ebb::tok
