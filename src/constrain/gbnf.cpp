// constrain/gbnf.cpp — a GBNF parser that writes straight into a Grammar.
//
// One pass over the text: a rule's name gets its Grammar rule at its first mention (use or
// definition), so rules may come in any order; references to names never defined are reported
// at the end, at their first use. Groups, character classes and repetitions become generated
// rules named "<rule>_<kind><id>": '_' never appears in a GBNF name, so they cannot clash with
// a rule the text defines later.
//
// Compatibility with llama.cpp's parser: the same syntax and escapes; a string's characters and
// \x \u \U values are code points written as UTF-8 (so "\xe9" is U+00E9, two bytes), as
// llama.cpp matches code points. Beyond llama.cpp: a line starting with '|' continues the
// alternatives of the rule above; a rule defined twice, an empty class and a repetition of
// something that can match the empty string are errors rather than silent surprises.
#include "constrain/gbnf.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ebb/error.h"

namespace ebb::constrain {

namespace {

using Ranges = CodepointRanges;

// Parentheses nest at most this deep: the parser recurses once per level.
constexpr int kMaxDepth = 256;
// Grammar symbols all repetitions of one grammar may expand to (a bounded count n costs n), so
// a long text of large counts cannot exhaust memory below Grammar's own rule limit.
constexpr int64_t kMaxExpansion = 1000000;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-';
}

// A parsed sequence element: its symbols, and the product of the bounded counts nested in it.
struct Item {
  Sequence symbols;
  int64_t weight = 1;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Grammar Parse() {
    SkipSpace(true);
    while (pos_ < t_.size()) ParseRule();
    // Undefined rules, the earliest use first.
    const RuleInfo* undefined = nullptr;
    for (const auto& [name, info] : rules_) {
      if (!info.defined && (undefined == nullptr || info.first_use < undefined->first_use)) {
        undefined = &info;
      }
    }
    if (undefined != nullptr) {
      Fail("undefined rule '" + g_.rules()[static_cast<size_t>(undefined->id)].name +
               "': define it with `" + g_.rules()[static_cast<size_t>(undefined->id)].name +
               " ::= ...`",
           undefined->first_use);
    }
    const auto root = rules_.find("root");
    if (root == rules_.end()) {
      throw Error(ErrorCode::InvalidArgument,
                  "grammar: no rule named 'root': add `root ::= ...`, the rule the whole text "
                  "must match");
    }
    CheckRepeatedItemsAreNotNullable();
    g_.set_root(root->second.id);
    g_.Validate("grammar");
    return std::move(g_);
  }

 private:
  struct RuleInfo {
    int32_t id = -1;
    bool defined = false;
    size_t defined_at = 0;
    size_t first_use = std::string_view::npos;
  };

  [[noreturn]] void Fail(const std::string& what, size_t offset) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<uint8_t>(t_[i]) & 0xC0) != 0x80) {
        ++column;  // columns count characters, not UTF-8 bytes
      }
    }
    throw Error(ErrorCode::InvalidArgument, "grammar: line " + std::to_string(line) + ", column " +
                                                std::to_string(column) + ": " + what);
  }

  size_t LineOf(size_t offset) const {
    return 1 + static_cast<size_t>(
                   std::count(t_.begin(), t_.begin() + static_cast<long>(offset), '\n'));
  }

  // What an unexpected character is called in a message.
  std::string Describe(size_t at) const {
    if (at >= t_.size()) return "the end of the text";
    const char c = t_[at];
    if (c == '\n' || c == '\r') return "the end of the line";
    if (c == ')') return "an unmatched ')'";
    if (t_.substr(at, 3) == "::=") return "'::=' (each rule starts on a line of its own)";
    if (c == '_') return "'_' (rule names use letters, digits and '-')";
    if (static_cast<uint8_t>(c) >= 0x21 && static_cast<uint8_t>(c) < 0x7F) {
      return std::string("'") + c + "'";
    }
    char buf[16];
    snprintf(buf, sizeof buf, "byte 0x%02X", static_cast<unsigned>(static_cast<uint8_t>(c)));
    return buf;
  }

  bool Peek(char c) const { return pos_ < t_.size() && t_[pos_] == c; }

  // Skips blanks and # comments; newlines too when `newline_ok` (inside parentheses, after
  // '::=' and '|').
  void SkipSpace(bool newline_ok) {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n' && t_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  // A generated rule's name (see the file comment).
  std::string Name(std::string_view kind) const {
    return current_rule_ + "_" + std::string(kind) + std::to_string(g_.rules().size());
  }

  RuleInfo& Lookup(const std::string& name) {
    RuleInfo& info = rules_[name];
    if (info.id < 0) info.id = g_.AddRule(name);
    return info;
  }

  std::string ParseName() {
    const size_t start = pos_;
    while (pos_ < t_.size() && IsNameChar(t_[pos_])) ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }

  void ParseRule() {
    const size_t start = pos_;
    const std::string name = ParseName();
    if (name.empty()) Fail("expected a rule name, found " + Describe(pos_), pos_);
    SkipSpace(false);
    if (t_.substr(pos_, 3) != "::=") {
      Fail("expected '::=' after the rule name '" + name + "', found " + Describe(pos_), pos_);
    }
    pos_ += 3;
    SkipSpace(true);
    RuleInfo& info = Lookup(name);
    if (info.defined) {
      Fail("rule '" + name + "' is defined twice (first on line " +
               std::to_string(LineOf(info.defined_at)) + ")",
           start);
    }
    info.defined = true;
    info.defined_at = start;
    current_rule_ = name;
    const int32_t id = info.id;
    try {
      for (Item& alt : ParseAlternatives(false, 0)) g_.AddAlternative(id, std::move(alt.symbols));
    } catch (const Error& e) {
      // Grammar's limits (rule count, repetition count) get the place that hit them.
      if (std::string_view(e.what()).rfind("grammar: ", 0) == 0) throw;
      Fail(e.what(), item_start_);
    }
    if (pos_ < t_.size() && t_[pos_] != '\n' && t_[pos_] != '\r') {
      Fail("expected the end of the rule, found " + Describe(pos_), pos_);
    }
    SkipSpace(true);
  }

  std::vector<Item> ParseAlternatives(bool nested, int depth) {
    std::vector<Item> alts;
    alts.push_back(ParseSequence(nested, depth));
    while (true) {
      if (Peek('|')) {
        ++pos_;
        SkipSpace(true);
        alts.push_back(ParseSequence(nested, depth));
        continue;
      }
      if (!nested && pos_ < t_.size() && (t_[pos_] == '\n' || t_[pos_] == '\r')) {
        // A following line that starts with '|' continues this rule.
        const size_t save = pos_;
        SkipSpace(true);
        if (Peek('|')) continue;
        pos_ = save;
      }
      break;
    }
    return alts;
  }

  // One symbol standing for `item` (wrapping it into a rule unless it is one symbol).
  Symbol AsSymbol(Sequence symbols) {
    if (symbols.size() == 1) return symbols[0];
    return Symbol::Rule(g_.Choice({std::move(symbols)}, Name("seq")));
  }

  Item ParseSequence(bool nested, int depth) {
    std::vector<Item> items;
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      item_start_ = pos_;
      if (c == '"') {
        items.push_back({ParseLiteral(), 1});
      } else if (c == '[') {
        items.push_back({ClassItem(ParseClass()), 1});
      } else if (c == '.') {
        ++pos_;
        items.push_back({ClassItem({{0, kMaxCodepoint}}), 1});
      } else if (IsNameChar(c)) {
        const size_t at = pos_;
        RuleInfo& info = Lookup(ParseName());
        if (info.first_use == std::string_view::npos) info.first_use = at;
        items.push_back({{Symbol::Rule(info.id)}, 1});
      } else if (c == '(') {
        if (depth + 1 > kMaxDepth) {
          Fail("parentheses nested deeper than " + std::to_string(kMaxDepth) +
                   " levels are not supported",
               pos_);
        }
        const size_t open = pos_;
        ++pos_;
        SkipSpace(true);
        std::vector<Item> alts = ParseAlternatives(true, depth + 1);
        if (!Peek(')')) {
          Fail("expected ')' to close the '(' on line " + std::to_string(LineOf(open)) +
                   ", found " + Describe(pos_),
               pos_);
        }
        ++pos_;
        Item group;
        for (const Item& a : alts) group.weight = std::max(group.weight, a.weight);
        if (alts.size() == 1) {
          group.symbols = std::move(alts[0].symbols);
        } else {
          std::vector<Sequence> seqs;
          for (Item& a : alts) seqs.push_back(std::move(a.symbols));
          group.symbols = {Symbol::Rule(g_.Choice(std::move(seqs), Name("group")))};
        }
        items.push_back(std::move(group));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) Fail(std::string("'") + c + "' has nothing to repeat", pos_);
        ParseQuantifier(items.back(), nested);
      } else if (c == '<' || c == '!') {
        Fail(
            "token references (<...>, !<...>) are not supported: write the token's text as a "
            "string",
            pos_);
      } else {
        break;
      }
      SkipSpace(nested);
    }
    Item seq;
    for (Item& item : items) {
      seq.weight = std::max(seq.weight, item.weight);
      seq.symbols.insert(seq.symbols.end(), item.symbols.begin(), item.symbols.end());
    }
    return seq;
  }

  int64_t ParseCount() {
    int64_t v = 0;
    while (pos_ < t_.size() && IsDigit(t_[pos_])) {
      v = std::min<int64_t>(v * 10 + (t_[pos_] - '0'), int64_t{1} << 40);
      ++pos_;
    }
    return v;
  }

  void ParseQuantifier(Item& item, bool nested) {
    const size_t q = pos_;
    int64_t min = 0, max = -1;
    const char c = t_[pos_++];
    if (c == '+') {
      min = 1;
    } else if (c == '?') {
      max = 1;
    } else if (c == '{') {
      SkipSpace(nested);
      if (pos_ >= t_.size() || !IsDigit(t_[pos_])) {
        Fail("expected a number after '{', found " + Describe(pos_), pos_);
      }
      min = max = ParseCount();
      SkipSpace(nested);
      if (Peek(',')) {
        ++pos_;
        SkipSpace(nested);
        max = -1;
        if (pos_ < t_.size() && IsDigit(t_[pos_])) max = ParseCount();
        SkipSpace(nested);
      }
      if (!Peek('}')) Fail("expected '}' to end the repetition, found " + Describe(pos_), pos_);
      ++pos_;
      if (max >= 0 && max < min) {
        Fail("the repetition {" + std::to_string(min) + "," + std::to_string(max) +
                 "} has its maximum below its minimum",
             q);
      }
      if (min > Grammar::kMaxRepeat || max > Grammar::kMaxRepeat) {
        Fail("the repetition count " + std::to_string(std::max(min, max)) +
                 " is above the limit of " + std::to_string(Grammar::kMaxRepeat) +
                 ": use * or {n,} for an unbounded count",
             q);
      }
    }
    const int64_t factor = std::max<int64_t>(max < 0 ? min : max, 1);
    if (factor * item.weight > Grammar::kMaxRepeat) {
      Fail("nested repetitions multiply to " + std::to_string(factor * item.weight) +
               " copies, above the limit of " + std::to_string(Grammar::kMaxRepeat),
           q);
    }
    expansion_ += factor;
    if (expansion_ > kMaxExpansion) {
      Fail("the repetitions of the grammar add up to more than " + std::to_string(kMaxExpansion) +
               " copies: use fewer or smaller counts, or * and +",
           q);
    }
    item.weight *= factor;
    if (item.symbols.empty() || (min == 1 && max == 1)) return;  // "" repeated is ""
    if (max == 0) {
      item.symbols.clear();
      return;
    }
    const Symbol symbol = AsSymbol(std::move(item.symbols));
    if (max < 0) unbounded_.emplace_back(symbol, q);
    item.symbols = {Symbol::Rule(g_.Repeat(symbol, min, max, Name("rep")))};
  }

  // A character of a string or class, pos_ at it: an escape or one UTF-8 character.
  uint32_t ParseChar() {
    const size_t start = pos_;
    if (t_[pos_] != '\\') return NextCodepoint();
    if (pos_ + 1 >= t_.size()) Fail("'\\' at the end of the text", start);
    const char e = t_[pos_ + 1];
    pos_ += 2;
    int digits = 0;
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
        return static_cast<uint8_t>(e);
      case 'x':
        digits = 2;
        break;
      case 'u':
        digits = 4;
        break;
      case 'U':
        digits = 8;
        break;
      default:
        Fail(std::string("unknown escape '\\") + (static_cast<uint8_t>(e) < 0x80 ? e : '?') +
                 "' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)",
             start);
    }
    uint64_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = pos_ < t_.size() ? HexDigitValue(t_[pos_]) : -1;
      if (h < 0) {
        Fail(std::string("'\\") + e + "' needs " + std::to_string(digits) + " hex digits", start);
      }
      v = v * 16 + static_cast<uint64_t>(h);
      ++pos_;
    }
    if (v > kMaxCodepoint || IsSurrogate(static_cast<uint32_t>(v))) {
      Fail("the escape " + std::string(t_.substr(start, pos_ - start)) +
               " is not a Unicode character (surrogates and values above 10FFFF are not)",
           start);
    }
    return static_cast<uint32_t>(v);
  }

  uint32_t NextCodepoint() {
    const auto [cp, len] = DecodeUtf8At(t_, pos_);
    if (len == 0) Fail("invalid UTF-8", pos_);
    pos_ += len;
    return cp;
  }

  Sequence ParseLiteral() {
    const size_t open = pos_;
    ++pos_;
    std::string text;
    while (true) {
      if (pos_ >= t_.size()) Fail("the string is not closed with '\"'", open);
      if (t_[pos_] == '"') break;
      AppendUtf8(ParseChar(), text);
    }
    ++pos_;
    Sequence s;
    g_.AppendLiteral(s, text);
    return s;
  }

  Ranges ParseClass() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (Peek('^')) {
      negated = true;
      ++pos_;
    }
    if (Peek(']')) {
      Fail(std::string("the empty class ") + (negated ? "[^]" : "[]") +
               " is not supported: use '.' for any character",
           open);
    }
    Ranges ranges;
    while (true) {
      if (pos_ >= t_.size()) Fail("the character class is not closed with ']'", open);
      if (t_[pos_] == ']') break;
      const size_t at = pos_;
      const uint32_t lo = ParseChar();
      uint32_t hi = lo;
      if (Peek('-') && pos_ + 1 < t_.size() && t_[pos_ + 1] != ']') {
        ++pos_;
        hi = ParseChar();
        if (hi < lo) Fail("the range in the class is out of order", at);
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    ranges = NormalizeRanges(std::move(ranges));
    if (negated) ranges = ComplementRanges(ranges);
    if (ranges.empty()) Fail("the character class matches no character", open);
    return ranges;
  }

  // A class as symbols: one character inline, otherwise a shared rule per distinct class.
  Sequence ClassItem(const Ranges& ranges) {
    Sequence s;
    if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
      std::string text;
      AppendUtf8(ranges[0].first, text);
      g_.AppendLiteral(s, text);
      return s;
    }
    auto it = classes_.find(ranges);
    if (it == classes_.end()) {
      std::vector<Sequence> alts;
      g_.AppendCodepointAlternatives(ranges, alts);
      it = classes_.emplace(ranges, g_.Choice(std::move(alts), Name("class"))).first;
    }
    s.push_back(Symbol::Rule(it->second));
    return s;
  }

  // `x*` with an x that can match the empty string would loop (Validate reports it as left
  // recursion of a generated rule); name the repetition instead.
  void CheckRepeatedItemsAreNotNullable() const {
    if (unbounded_.empty()) return;
    const auto& rules = g_.rules();
    std::vector<char> nullable(rules.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < rules.size(); ++i) {
        if (nullable[i]) continue;
        for (const Sequence& alt : rules[i].alternatives) {
          if (std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
                return s.is_rule && nullable[static_cast<size_t>(s.index)];
              })) {
            nullable[i] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    for (const auto& [symbol, at] : unbounded_) {
      if (symbol.is_rule && nullable[static_cast<size_t>(symbol.index)]) {
        Fail(std::string("the item before '") + t_[at] +
                 "' can match the empty string, so its repetition could loop forever: make the "
                 "item non-empty (e.g. x ::= [a-z]+ with x*, not x ::= [a-z]*)",
             at);
      }
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
  size_t item_start_ = 0;  // the element being parsed, for errors Grammar throws
  Grammar g_;
  std::string current_rule_;
  std::unordered_map<std::string, RuleInfo> rules_;
  std::map<Ranges, int32_t> classes_;
  std::vector<std::pair<Symbol, size_t>> unbounded_;  // (repeated symbol, offset of * + {n,})
  int64_t expansion_ = 0;
};

}  // namespace

Grammar ParseGbnf(std::string_view text) { return Parser(text).Parse(); }

}  // namespace ebb::constrain
