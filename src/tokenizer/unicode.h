// Unicode character properties and normalization forms for the tokenizer, on utf8proc (and
// PCRE2 for the few binary properties utf8proc lacks). Each predicate reproduces the Rust
// function the reference tokenizer uses, named in its comment. Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ebb::tok {

// Rust char::is_whitespace (the Unicode White_Space property).
bool IsWhitespace(char32_t c);
// Rust char::is_numeric (general categories Nd, Nl, No).
bool IsNumeric(char32_t c);
// Any punctuation category (Pc Pd Ps Pe Pi Pf Po).
bool IsPunctuation(char32_t c);
// BertPreTokenizer / Punctuation: is_ascii_punctuation() || is_punctuation().
bool IsBertPunctuation(char32_t c);
// BertNormalizer clean_text: control = categories Cc Cf Co Cs, except \t \n \r.
bool IsBertControl(char32_t c);
// BertNormalizer clean_text whitespace: \t \n \r or White_Space.
inline bool IsBertWhitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || IsWhitespace(c);
}
// BertNormalizer handle_chinese_chars: CJK ideograph blocks.
bool IsChineseChar(char32_t c);
// Any mark category (Mn Mc Me): StripAccents.
bool IsMark(char32_t c);
// Mn only: BertNormalizer strip_accents.
bool IsMarkNonspacing(char32_t c);
// Rust regex `\w` (Alphabetic, M, Nd, Pc, Join_Control): added tokens' single_word.
bool IsRegexWordChar(char32_t c);

// Appends Rust's char::to_lowercase(c) (full mapping: U+0130 lowercases to two code points).
void AppendLowercase(std::string& out, char32_t c);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// Replaces `s` (valid UTF-8) with its normal form. Throws ebb::Error(Internal) if utf8proc fails.
void NormalizeUnicode(NormalForm form, std::string& s);

}  // namespace ebb::tok
