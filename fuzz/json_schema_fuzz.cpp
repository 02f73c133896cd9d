// libFuzzer target: compiles arbitrary text as a JSON Schema (constrain/json_schema.h). An
// ebb::Error is an expected outcome; crashes, hangs, sanitizer reports or other exceptions
// (nlohmann's included) are bugs. When the schema compiles, the grammar must be runnable and
// sound: a few fixed texts are matched, and a walk driven by the input's bytes through the
// grammar's allowed next bytes must never get stuck short of an accepting state, and every
// accepting text it reaches must be valid JSON.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "constrain/grammar.h"
#include "constrain/json_schema.h"
#include "constrain/matcher.h"
#include "ebb/error.h"

namespace {

// RFC 8259 syntax, UTF-8 included. (nlohmann::json::accept refuses numbers beyond a double's
// range, such as 1e999, which are valid JSON and which the grammar rightly accepts.)
class JsonSyntax {
 public:
  explicit JsonSyntax(std::string_view s) : s_(s) {}
  bool Valid() { return Value() && i_ == s_.size(); }

 private:
  bool Peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  bool Eat(char c) { return Peek(c) && (++i_, true); }
  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }
  bool Value() {
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{':
        return Members('}', true);
      case '[':
        return Members(']', false);
      case '"':
        return String();
      case 't':
        return Word("true");
      case 'f':
        return Word("false");
      case 'n':
        return Word("null");
      default:
        return Number();
    }
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool Number() {
    Eat('-');
    if (!Eat('0') && !(i_ < s_.size() && s_[i_] >= '1' && s_[i_] <= '9' && Digits())) return false;
    if (Eat('.') && !Digits()) return false;
    if (Eat('e') || Eat('E')) {
      if (!Eat('+')) Eat('-');
      if (!Digits()) return false;
    }
    return true;
  }
  bool Members(char close, bool object) {
    ++i_;
    if (Eat(close)) return true;
    do {
      if (object && !(String() && Eat(':'))) return false;
      if (!Value()) return false;
    } while (Eat(','));
    return Eat(close);
  }
  bool String() {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_++])))
              return false;
          }
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
      } else if (c >= 0x80) {
        // Shortest-form UTF-8 of a scalar value.
        const int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : -1;
        if (n < 0 || c > 0xF4 || i_ + static_cast<size_t>(n) > s_.size()) return false;
        uint32_t cp = c & (0x3F >> n);
        for (int k = 0; k < n; ++k) {
          const auto d = static_cast<unsigned char>(s_[i_++]);
          if ((d & 0xC0) != 0x80) return false;
          cp = (cp << 6) | (d & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
          return false;
        }
      }
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ebb::constrain::Grammar grammar;
  try {
    grammar = ebb::constrain::CompileJsonSchema(text);
  } catch (const ebb::Error& e) {
    if (e.code() != ebb::ErrorCode::InvalidArgument) std::abort();  // Internal: a bug
    return 0;
  }
  for (const char* probe : {"null", "true", "0", "-1.5e3", "\"\"", "\"a\\n\"", "[]", "{}",
                            "{\"a\":1}", "[1,\"x\",null]"}) {
    (void)ebb::constrain::Matches(grammar, probe);
  }
  const ebb::constrain::FlatGrammar flat(grammar);
  ebb::constrain::Matcher matcher(flat);
  std::string out;
  for (size_t step = 0; step < 512; ++step) {
    if (matcher.IsAccepting()) {
      if (!JsonSyntax(out).Valid()) std::abort();  // the grammar accepted invalid JSON
      if (step >= 64 || !matcher.CanContinue()) break;
    }
    const ebb::constrain::ByteSet next = matcher.NextBytes();
    if (next.none()) {
      if (!matcher.IsAccepting()) std::abort();  // a dead end: a prefix with no completion
      break;
    }
    // Pick the k-th allowed byte, k from the input (cycling), so the walk explores.
    size_t k = size ? data[step % size] % next.count() : 0;
    int byte = 0;
    for (; byte < 256; ++byte) {
      if (next.test(static_cast<size_t>(byte)) && k-- == 0) break;
    }
    if (!matcher.Advance(static_cast<uint8_t>(byte))) std::abort();
    out += static_cast<char>(byte);
  }
  return 0;
}
