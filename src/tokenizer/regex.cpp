#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "ebb/error.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

// Oniguruma (Unicode): \s = \t \n \v \f \r U+0085 + Zl Zp Zs; \w = L M N Pc; \d = Nd.
constexpr std::string_view kOnigSpace = "\\x{09}-\\x{0d}\\x{85}\\p{Z}";
constexpr std::string_view kOnigWord = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
// Rust regex: \s = White_Space; \w = Alphabetic M Nd Pc Join_Control; \d = Nd.
constexpr std::string_view kRustSpace = "\\p{White_Space}";
constexpr std::string_view kRustWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
constexpr std::string_view kDigit = "\\p{Nd}";
constexpr std::string_view kHex = "0-9a-fA-F";

struct ThreadMatchState {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    md = pcre2_match_data_create(32, nullptr);
    mctx = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (mctx != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(mctx, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(mctx);
    pcre2_jit_stack_free(jit_stack);
  }
};

ThreadMatchState& State() {
  thread_local ThreadMatchState state;
  if (state.md == nullptr) throw Error(ErrorCode::ResourceExhausted, "out of memory (regex)");
  return state;
}

}  // namespace

std::string TranslateRegex(std::string_view p, RegexDialect dialect) {
  const bool onig = dialect == RegexDialect::kOniguruma;
  const std::string_view space = onig ? kOnigSpace : kRustSpace;
  const std::string_view word = onig ? kOnigWord : kRustWord;
  std::string out;
  out.reserve(p.size() * 2);
  bool in_class = false;
  size_t class_start = 0;  // index in p just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      std::string_view cls;
      bool negated = false;
      switch (e) {
        case 's':
          cls = space;
          break;
        case 'S':
          cls = space;
          negated = true;
          break;
        case 'w':
          cls = word;
          break;
        case 'W':
          cls = word;
          negated = true;
          break;
        case 'd':
          cls = kDigit;
          break;
        case 'D':
          cls = kDigit;
          negated = true;
          break;
        case 'h':
          cls = onig ? kHex : std::string_view();
          break;
        case 'H':
          cls = onig ? kHex : std::string_view();
          negated = true;
          break;
        default:
          break;
      }
      if (!cls.empty() && !(in_class && negated)) {
        if (in_class) {
          out.append(cls);
        } else {
          out.append(negated ? "[^" : "[");
          out.append(cls);
          out.push_back(']');
        }
      } else {
        out.push_back(c);
        out.push_back(e);
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') {
        out.push_back('^');
        ++i;
      }
      class_start = i + 1;
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']' && i != class_start) in_class = false;
    out.push_back(c);
  }
  return out;
}

Pattern Pattern::Regex(std::string_view regex, RegexDialect dialect) {
  const std::string translated = TranslateRegex(regex, dialect);
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(), PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error(ErrorCode::InvalidArgument, "invalid regex \"" + std::string(regex) +
                                                "\": " + reinterpret_cast<const char*>(buf));
  }
  Pattern p;
  p.code_ = code;
  p.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return p;
}

Pattern Pattern::Literal(std::string_view literal) {
  if (literal.empty()) {
    // Matches the empty string everywhere, like the escaped empty regex of the reference.
    return Regex("", RegexDialect::kOniguruma);
  }
  Pattern p;
  p.literal_ = std::string(literal);
  return p;
}

Pattern::Pattern(Pattern&& o) noexcept
    : literal_(std::move(o.literal_)), code_(std::exchange(o.code_, nullptr)), jit_(o.jit_) {}

Pattern& Pattern::operator=(Pattern&& o) noexcept {
  if (this != &o) {
    pcre2_code_free(static_cast<pcre2_code*>(code_));
    literal_ = std::move(o.literal_);
    code_ = std::exchange(o.code_, nullptr);
    jit_ = o.jit_;
  }
  return *this;
}

Pattern::~Pattern() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

size_t Pattern::CharLenAt(std::string_view s, size_t i) {
  return Utf8SeqLen(static_cast<unsigned char>(s[i]));
}

bool Pattern::Find(std::string_view s, size_t from, size_t& match_start, size_t& match_end) const {
  if (code_ == nullptr) {
    size_t pos = s.find(literal_, from);
    if (pos == std::string_view::npos) return false;
    match_start = pos;
    match_end = pos + literal_.size();
    return true;
  }
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadMatchState& st = State();
  int rc;
  if (jit_) {
    rc = pcre2_jit_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), from, 0, st.md,
                         st.mctx);
  } else {
    rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), from,
                     PCRE2_NO_UTF_CHECK, st.md, st.mctx);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0 && rc != 0) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(rc, buf, sizeof buf);
    throw Error(ErrorCode::ResourceExhausted,
                std::string("regex match failed: ") + reinterpret_cast<const char*>(buf));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.md);
  match_start = ov[0];
  match_end = ov[1];
  return true;
}

}  // namespace ebb::tok
