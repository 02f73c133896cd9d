#include "tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "ebb/error.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

inline utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// A single-character class test on PCRE2 (for properties utf8proc does not expose).
class CharClass {
 public:
  explicit CharClass(const char* pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, nullptr);
    if (code_ == nullptr) std::abort();  // constant pattern: cannot fail
  }
  ~CharClass() { pcre2_code_free(code_); }
  bool Matches(char32_t c) const {
    std::string s;
    AppendUtf8(s, c);
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                         PCRE2_NO_UTF_CHECK, md, nullptr);
    pcre2_match_data_free(md);
    return rc > 0;
  }

 private:
  pcre2_code* code_;
};

}  // namespace

bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  auto cat = Category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool IsPunctuation(char32_t c) {
  auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool IsBertPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  return IsPunctuation(c);
}

bool IsBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  auto cat = Category(c);
  // Unassigned code points (Cn) are kept, as the reference keeps them.
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}

bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsMark(char32_t c) {
  auto cat = Category(c);
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

bool IsMarkNonspacing(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_MN; }

bool IsRegexWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static const CharClass kWord("[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]");
  return kWord.Matches(c);
}

void AppendLowercase(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return;
  }
  if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: "i" + COMBINING DOT ABOVE
    out.append("i\xCC\x87");
    return;
  }
  AppendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

void NormalizeUnicode(NormalForm form, std::string& s) {
  if (s.empty()) return;
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  // ASCII is invariant under every normal form.
  bool ascii = true;
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return;
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                    static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    throw Error(ErrorCode::Internal,
                std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
  }
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> holder(dst, &std::free);
  s.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
}

}  // namespace ebb::tok
