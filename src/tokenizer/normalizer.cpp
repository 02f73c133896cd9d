#include "tokenizer/normalizer.h"

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void Normalize(std::string& s) const override { NormalizeUnicode(form_, s); }

 private:
  NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void Normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) AppendLowercase(out, NextCodePoint(s, i));
    s.swap(out);
  }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      while (begin < end) {
        size_t i = begin;
        if (!IsWhitespace(NextCodePoint(s, i))) break;
        begin = i;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start;
        if (!IsWhitespace(PrevCodePoint(s, end, start))) break;
        end = start;
      }
    }
    s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

// Rewrites `s` one code point at a time: `emit(out, c, raw)` appends what replaces code point `c`
// (whose UTF-8 bytes are `raw`) to `out`, possibly nothing.
template <typename Emit>
void RewriteChars(std::string& s, Emit emit) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char32_t c = NextCodePoint(s, i);
    emit(out, c, std::string_view(s).substr(start, i - start));
  }
  s.swap(out);
}

// Removes characters for which `drop` is true.
template <typename Pred>
void FilterChars(std::string& s, Pred drop) {
  RewriteChars(s, [&](std::string& out, char32_t c, std::string_view raw) {
    if (!drop(c)) out.append(raw);
  });
}

class StripAccentsNormalizer final : public Normalizer {
 public:
  void Normalize(std::string& s) const override { FilterChars(s, IsMark); }
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string& s) const override {
    std::string out;
    size_t last = 0;
    bool any = false;
    pattern_.ForEachMatch(s, [&](size_t b, size_t e) {
      if (!any) out.reserve(s.size() + content_.size());
      any = true;
      out.append(s, last, b - last);
      out.append(content_);
      last = e;
    });
    if (!any) return;
    out.append(s, last, std::string::npos);
    s.swap(out);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void Normalize(std::string& s) const override {
    if (!s.empty()) s = prepend_ + s;
  }

 private:
  std::string prepend_;
};

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  void Normalize(std::string& s) const override {
    if (clean_text_) {
      RewriteChars(s, [](std::string& out, char32_t c, std::string_view raw) {
        if (c == 0 || c == 0xFFFD || IsBertControl(c)) return;
        if (IsBertWhitespace(c)) {
          out.push_back(' ');
        } else {
          out.append(raw);
        }
      });
    }
    if (chinese_) {
      RewriteChars(s, [](std::string& out, char32_t c, std::string_view raw) {
        if (IsChineseChar(c)) {
          out.push_back(' ');
          out.append(raw);
          out.push_back(' ');
        } else {
          out.append(raw);
        }
      });
    }
    if (strip_accents_) {
      NormalizeUnicode(NormalForm::kNFD, s);
      FilterChars(s, IsMarkNonspacing);
    }
    if (lowercase_) LowercaseNormalizer().Normalize(s);
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class NmtNormalizer final : public Normalizer {
 public:
  void Normalize(std::string& s) const override {
    RewriteChars(s, [](std::string& out, char32_t c, std::string_view raw) {
      if ((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F || c == 0x8F ||
          c == 0x9F) {
        return;
      }
      if (c == 0x9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
          (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
          c == 0xFEFF || c == 0xFFFD) {
        out.push_back(' ');
      } else {
        out.append(raw);
      }
    });
  }
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  void Normalize(std::string& s) const override {
    std::string out;
    AppendByteLevel(out, s);
    s.swap(out);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> items)
      : items_(std::move(items)) {}
  void Normalize(std::string& s) const override {
    for (const auto& n : items_) n->Normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

}  // namespace

// Shared with the pre-tokenizer's Split: {"String": s} or {"Regex": r}.
Pattern MakePattern(const JsonRef& j) {
  if (j.Has("String")) return Pattern::Literal(j.At("String").String());
  if (j.Has("Regex")) {
    JsonRef r = j.At("Regex");
    try {
      return Pattern::Regex(r.String(), RegexDialect::kOniguruma);
    } catch (const std::exception& e) {
      r.Fail(e.what());
    }
  }
  j.Fail("expected {\"String\": …} or {\"Regex\": …}");
}

std::unique_ptr<Normalizer> MakeNormalizer(const JsonRef& j) {
  const std::string type = j.Type();
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(j.GetBool("strip_left", true),
                                             j.GetBool("strip_right", true));
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(MakePattern(j.At("pattern")),
                                               j.At("content").String());
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(j.At("prepend").String());
  if (type == "BertNormalizer") {
    const bool lowercase = j.GetBool("lowercase", true);
    bool strip = lowercase;
    if (auto sa = j.Find("strip_accents")) strip = sa->Bool();
    return std::make_unique<BertNormalizer>(
        j.GetBool("clean_text", true), j.GetBool("handle_chinese_chars", true), strip, lowercase);
  }
  if (type == "Nmt") return std::make_unique<NmtNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    JsonRef list = j.At("normalizers");
    std::vector<std::unique_ptr<Normalizer>> items;
    for (size_t i = 0; i < list.Size(); ++i) items.push_back(MakeNormalizer(list.Index(i)));
    return std::make_unique<SequenceNormalizer>(std::move(items));
  }
  j.At("type").Fail("unsupported normalizer \"" + type + "\"");
}

}  // namespace ebb::tok
