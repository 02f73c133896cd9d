// Pattern matching for pre-tokenizers and normalizers: PCRE2 (UTF + UCP, JIT-compiled) with
// the match-iteration rules of the reference library.
//
// The reference compiles tokenizer.json regexes with Oniguruma and a few built-in ones with
// Rust's `regex` crate; their `\s \S \w \W \d \D \h` differ from PCRE2's, so patterns are
// rewritten to explicit Unicode classes for the chosen dialect before compiling.
//
// Thread-safety: a compiled Pattern is immutable; ForEachMatch may run concurrently (it uses
// thread-local match data).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ebb::tok {

enum class RegexDialect { kOniguruma, kRustRegex };

// Rewrites `pattern` for PCRE2 so that it matches what `dialect` would. Exposed for tests.
std::string TranslateRegex(std::string_view pattern, RegexDialect dialect);

class Pattern {
 public:
  // A regular expression. Throws ebb::Error(InvalidArgument) "invalid regex …" when it does
  // not compile (the caller adds the JSON path).
  static Pattern Regex(std::string_view regex, RegexDialect dialect = RegexDialect::kOniguruma);
  // A literal string (tokenizer.json's {"String": …} patterns).
  static Pattern Literal(std::string_view literal);

  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;
  ~Pattern();

  // Calls on_match(start, end) (byte offsets) for each successive non-overlapping match in
  // `s`, which must be valid UTF-8. Empty matches follow Oniguruma's find_iter: an empty match
  // right where the previous match ended is skipped by advancing one character.
  template <typename F>
  void ForEachMatch(std::string_view s, F&& on_match) const {
    size_t last_end = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= s.size()) {
      size_t ms, me;
      if (!Find(s, last_end, ms, me)) break;
      if (ms == me && have_last && last_match_end == me) {
        last_end += last_end < s.size() ? CharLenAt(s, last_end) : 1;
        continue;
      }
      last_end = me;
      last_match_end = me;
      have_last = true;
      on_match(ms, me);
    }
  }

  // The leftmost match at or after `from`; false when there is none.
  bool Find(std::string_view s, size_t from, size_t& match_start, size_t& match_end) const;

  bool is_literal() const { return code_ == nullptr; }

 private:
  Pattern() = default;
  static size_t CharLenAt(std::string_view s, size_t i);

  std::string literal_;   // when code_ is null
  void* code_ = nullptr;  // pcre2_code*, owned
  bool jit_ = false;
};

}  // namespace ebb::tok
