#include "template/lexer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "template/value.h"

namespace ebb::tmpl {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Longest operators first.
constexpr std::array<std::string_view, 25> kOperators = {
    "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
    ">",  "=",  ".",  ",",  ":",  "|",  "(", ")", "[", "]", "{", "}"};

class Lexer {
 public:
  Lexer(std::string_view source, std::string_view name, const LexerOptions& options)
      : name_(name), options_(options) {
    // Normalize \r\n and \r to \n (Jinja's newline_sequence) and drop one trailing newline.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!options_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
    }
  }

  std::vector<Token> Run() {
    while (pos_ < src_.size()) {
      size_t start = FindTagStart(pos_);
      if (start == std::string::npos) {
        EmitText(pos_, src_.substr(pos_));
        break;
      }
      std::string text = src_.substr(pos_, start - pos_);
      const char kind = src_[start + 1];
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      ApplyLeftStrip(text, sign, kind != '{');
      EmitText(pos_, std::move(text));
      if (kind == '#') {
        LexComment(start);
      } else if (kind == '%' && LexRaw(start)) {
        // handled
      } else {
        LexTag(start, kind);
      }
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.pos = PosAt(src_.size());
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

 private:
  SourcePos PosAt(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return SourcePos{static_cast<uint32_t>(line),
                     static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
  }

  [[noreturn]] void Fail(size_t offset, std::string_view message) const {
    ThrowAt(name_, PosAt(offset), message);
  }

  size_t FindTagStart(size_t from) const {
    while (true) {
      size_t p = src_.find('{', from);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char next = src_[p + 1];
      if (next == '{' || next == '%' || next == '#') return p;
      from = p + 1;
    }
  }

  // "-" strips all whitespace before the tag; lstrip_blocks strips spaces before a block or
  // comment tag that starts its line ("+" opts out).
  void ApplyLeftStrip(std::string& text, char sign, bool is_block_or_comment) const {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0 && IsSpace(text[end - 1])) --end;
      text.resize(end);
    } else if (sign != '+' && options_.lstrip_blocks && is_block_or_comment) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
          std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), IsSpace)) {
        text.resize(l_pos);
      }
    }
  }

  void EmitText(size_t offset, std::string text) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::kText;
    t.text = std::move(text);
    t.pos = PosAt(offset);
    tokens_.push_back(std::move(t));
  }

  void Emit(TokenKind kind, size_t offset, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.pos = PosAt(offset);
    tokens_.push_back(std::move(t));
  }

  // After a tag end: "-" eats all following whitespace; trim_blocks eats one newline after
  // a block or comment end ("+" opts out).
  void FinishTagEnd(size_t after, char sign, bool block_or_comment) {
    size_t p = after;
    if (sign == '-') {
      while (p < src_.size() && IsSpace(src_[p])) ++p;
    } else if (sign != '+' && block_or_comment && options_.trim_blocks && p < src_.size() &&
               src_[p] == '\n') {
      ++p;
    }
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    pos_ = p;
  }

  void LexComment(size_t start) {
    size_t end = src_.find("#}", start + 2);
    if (end == std::string::npos) Fail(start, "unterminated comment; expected '#}'");
    char sign = end > start + 2 ? src_[end - 1] : '\0';
    FinishTagEnd(end + 2, sign == '-' || sign == '+' ? sign : '\0', true);
  }

  // {% raw %}...{% endraw %}: emits the content as text. Returns false if not a raw tag.
  bool LexRaw(size_t start) {
    size_t p = start + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) {
      return false;
    }
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      Fail(p, "expected '%}' after 'raw'");
    }
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    size_t content_start = p;
    // Find {%[-+]? endraw [-+]?%}
    size_t search = p;
    while (true) {
      size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) Fail(start, "unterminated raw block; expected '{% endraw %}'");
      size_t q = tag + 2;
      char sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      while (q < src_.size() && IsSpace(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") == 0) {
        q += 6;
        while (q < src_.size() && IsSpace(src_[q])) ++q;
        char end_sign = '\0';
        if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
        if (src_.compare(q, 2, "%}") == 0) {
          std::string content = src_.substr(content_start, tag - content_start);
          ApplyLeftStrip(content, sign, true);
          EmitText(content_start, std::move(content));
          FinishTagEnd(q + 2, end_sign, true);
          return true;
        }
      }
      search = tag + 2;
    }
  }

  void LexTag(size_t start, char kind) {
    const bool is_block = kind == '%';
    Emit(is_block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, start);
    size_t p = start + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    int depth = 0;
    const char close = is_block ? '%' : '}';
    while (true) {
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (p >= src_.size()) {
        Fail(start,
             is_block ? "unterminated tag; expected '%}'" : "unterminated tag; expected '}}'");
      }
      if (depth == 0) {
        char sign = '\0';
        size_t q = p;
        if (src_[q] == '-' || src_[q] == '+') sign = src_[q++];
        if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
          Emit(is_block ? TokenKind::kBlockEnd : TokenKind::kVarEnd, p);
          FinishTagEnd(q + 2, sign, is_block);
          return;
        }
      }
      const char c = src_[p];
      if (IsNameStart(c)) {
        size_t e = p;
        while (e < src_.size() && IsNameChar(src_[e])) ++e;
        Emit(TokenKind::kName, p, src_.substr(p, e - p));
        p = e;
      } else if (IsDigit(c)) {
        p = LexNumber(p);
      } else if (c == '\'' || c == '"') {
        p = LexString(p);
      } else {
        std::string_view op;
        for (std::string_view candidate : kOperators) {
          if (src_.compare(p, candidate.size(), candidate) == 0) {
            op = candidate;
            break;
          }
        }
        if (op.empty()) {
          Fail(p, std::string("unexpected character '") + c + "' in tag");
        }
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) Fail(p, "unexpected '" + std::string(op) + "'");
          --depth;
        }
        Emit(TokenKind::kOperator, p, std::string(op));
        p += op.size();
      }
    }
  }

  size_t LexNumber(size_t p) {
    size_t start = p;
    std::string digits;
    auto read_digits = [&]() {
      while (p < src_.size() && (IsDigit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() &&
                                                      IsDigit(src_[p + 1]) && p > start))) {
        if (src_[p] != '_') digits += src_[p];
        ++p;
      }
    };
    read_digits();
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
      is_float = true;
      digits += '.';
      ++p;
      read_digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        is_float = true;
        digits += 'e';
        digits += src_.substr(p + 1, q - p - 1);
        p = q;
        read_digits();
      }
    }
    Token t;
    t.pos = PosAt(start);
    if (is_float) {
      t.kind = TokenKind::kFloat;
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      t.kind = TokenKind::kInt;
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(digits.c_str(), &end, 10);
      if (errno == ERANGE) Fail(start, "integer literal out of range (int64)");
      t.int_value = v;
    }
    t.text = src_.substr(start, p - start);
    tokens_.push_back(std::move(t));
    return p;
  }

  size_t LexString(size_t p) {
    const size_t start = p;
    const char quote = src_[p++];
    std::string value;
    while (true) {
      if (p >= src_.size()) Fail(start, "unterminated string literal");
      char c = src_[p];
      if (c == quote) {
        ++p;
        break;
      }
      if (c != '\\') {
        value += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) Fail(start, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'v':
          value += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            int h = p + k < src_.size() ? HexValue(src_[p + k]) : -1;
            if (h < 0) Fail(p - 2, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) Fail(p - 2, "escape out of Unicode range in string literal");
          p += n;
          AppendUtf8(value, cp);
          break;
        }
        case 'N':
          Fail(p - 2, "unsupported \\N{...} escape in string literal");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(src_[p++] - '0');
            }
            AppendUtf8(value, cp);
          } else {
            value += '\\';  // unknown escapes are kept (Python unicode_escape)
            value += e;
          }
      }
    }
    Token t;
    t.kind = TokenKind::kString;
    t.text = std::move(value);
    t.pos = PosAt(start);
    tokens_.push_back(std::move(t));
    return p;
  }

  std::string src_;
  std::string_view name_;
  LexerOptions options_;
  std::vector<uint32_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source, std::string_view source_name,
                            const LexerOptions& options) {
  return Lexer(source, source_name, options).Run();
}

}  // namespace ebb::tmpl
