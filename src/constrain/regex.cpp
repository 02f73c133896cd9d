// constrain/regex.cpp — a regular expression parser that builds Grammar rules.
//
// Two passes: Parser turns the pattern into a small AST (Node), checking syntax and refusing
// what cannot be expressed as a context-free language over characters; Emitter turns the AST
// into rules. The AST stays because repetition needs it: `X*` with a nullable X would give the
// rule `star ::= X star | ε`, which is left-recursive through X's empty derivation, so the
// emitter repeats "X without its empty string" instead (NonEmpty), which matches the same
// strings and keeps every repetition making progress.
#include "constrain/regex.h"

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

// Parentheses nest at most this deep: the parser and the emitter recurse once per level.
constexpr int kMaxDepth = 256;
// Grammar symbols all repetitions of one pattern may expand to (each bounded count n costs n),
// so a long pattern of large counts cannot exhaust memory below Grammar's own rule limit.
constexpr int64_t kMaxExpansion = 1000000;

// The characters in both `a` and `b` (both normalized).
Ranges Intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].first, b[j].first);
    const uint32_t hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

Ranges DigitRanges() { return {{'0', '9'}}; }
Ranges WordRanges() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
// ECMAScript's \s (WhiteSpace and LineTerminator): JSON Schema patterns are ECMAScript.
Ranges SpaceRanges() {
  return {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}

// The AST. Fail (the empty language, from a class such as [^\s\S]) is folded away as nodes are
// built (MakeConcat, MakeAlt, MakeRepeat), so only a whole pattern can be Fail.
struct Node {
  enum Kind { kEmpty, kFail, kChars, kConcat, kAlt, kRepeat };
  Kind kind = kEmpty;
  Ranges ranges;               // kChars (normalized, not empty)
  std::vector<Node> children;  // kConcat, kAlt; kRepeat: exactly one
  int64_t min = 0, max = 0;    // kRepeat; max -1: unbounded
  bool nullable = true;        // matches the empty string
  int64_t weight = 1;          // product of the bounded counts nested in this node
};

Node MakeChars(Ranges ranges) {
  Node n;
  n.ranges = NormalizeRanges(std::move(ranges));
  n.kind = n.ranges.empty() ? Node::kFail : Node::kChars;
  n.nullable = false;
  return n;
}

Node MakeConcat(std::vector<Node> items) {
  Node n;
  n.kind = Node::kConcat;
  for (Node& item : items) {
    if (item.kind == Node::kFail) return item;
    if (item.kind == Node::kEmpty) continue;
    n.nullable = n.nullable && item.nullable;
    n.weight = std::max(n.weight, item.weight);
    if (item.kind == Node::kConcat) {
      for (Node& c : item.children) n.children.push_back(std::move(c));
    } else {
      n.children.push_back(std::move(item));
    }
  }
  if (n.children.empty()) return Node{};
  if (n.children.size() == 1) return std::move(n.children[0]);
  return n;
}

Node MakeAlt(std::vector<Node> branches) {
  Node n;
  n.kind = Node::kAlt;
  n.nullable = false;
  for (Node& b : branches) {
    if (b.kind == Node::kFail) continue;
    n.nullable = n.nullable || b.nullable;
    n.weight = std::max(n.weight, b.weight);
    n.children.push_back(std::move(b));
  }
  if (n.children.empty()) {
    Node fail;
    fail.kind = Node::kFail;
    fail.nullable = false;
    return fail;
  }
  if (n.children.size() == 1) return std::move(n.children[0]);
  return n;
}

Node MakeRepeat(Node child, int64_t min, int64_t max, int64_t weight) {
  if (child.kind == Node::kFail) return min == 0 ? Node{} : child;
  if (child.kind == Node::kEmpty || max == 0) return Node{};
  if (min == 1 && max == 1) return child;
  // Collapse a repetition of a repetition where the language allows: (X?){m,M} is X{0,M};
  // (X{k,}){m,M} is X{k*m,} when m >= 1 or k <= 1. Fewer nested loops mean fewer ambiguous
  // parses for the matcher to carry (it keeps one stack per distinct parse).
  if (child.kind == Node::kRepeat) {
    Node inner = std::move(child.children[0]);
    if (child.min == 0 && child.max == 1) return MakeRepeat(std::move(inner), 0, max, weight);
    if (child.max < 0 && (min >= 1 || child.min <= 1)) {
      return MakeRepeat(std::move(inner), child.min * min, -1, weight);
    }
    child.children[0] = std::move(inner);
  }
  Node n;
  n.kind = Node::kRepeat;
  n.nullable = min == 0 || child.nullable;
  n.min = min;
  n.max = max;
  n.weight = weight;
  n.children.push_back(std::move(child));
  return n;
}

// One top-level alternative and its anchors.
struct Branch {
  Node node;
  bool anchored_start = false;
  bool anchored_end = false;
};

class Parser {
 public:
  Parser(std::string_view pattern, const RegexOptions& options)
      : p_(pattern), source_(options.source) {}

  std::vector<Branch> ParseTop() {
    std::vector<Branch> branches;
    while (true) {
      Branch b;
      if (Peek('^')) {
        b.anchored_start = true;
        ++pos_;
      }
      b.node = ParseSequence(0, &b.anchored_end);
      branches.push_back(std::move(b));
      if (pos_ >= p_.size()) break;
      if (p_[pos_] == ')') Invalid("unmatched ')'", pos_);
      ++pos_;  // '|'
    }
    return branches;
  }

 private:
  [[noreturn]] void Invalid(const std::string& what, size_t offset) const {
    throw Error(ErrorCode::InvalidArgument,
                std::string(source_) + ": the pattern is not a valid regular expression: " + what +
                    " at offset " + std::to_string(offset));
  }
  [[noreturn]] void Unsupported(const std::string& what, size_t offset,
                                const std::string& hint) const {
    throw Error(ErrorCode::InvalidArgument, std::string(source_) + ": " + what + " at offset " +
                                                std::to_string(offset) + " is not supported (" +
                                                hint + ")");
  }

  bool Peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  bool PeekAt(size_t at, char c) const { return at < p_.size() && p_[at] == c; }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  // The code point at pos_ (a literal character of the pattern), advancing past it.
  uint32_t NextCodepoint() {
    const auto [cp, len] = DecodeUtf8At(p_, pos_);
    if (len == 0) Invalid("invalid UTF-8", pos_);
    pos_ += len;
    return cp;
  }

  // A sequence of quantified atoms, up to '|', ')' or the end. `anchored_end` is non-null only
  // at the top level, where a '$' may end the alternative.
  Node ParseSequence(int depth, bool* anchored_end) {
    std::vector<Node> items;
    while (pos_ < p_.size()) {
      const char c = p_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '$') {
        if (anchored_end != nullptr && (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|')) {
          *anchored_end = true;
          ++pos_;
          break;
        }
        Unsupported("'$' in the middle of the pattern", pos_,
                    "'$' may only end the pattern or a top-level alternative; write \\$ for a "
                    "literal dollar sign");
      }
      if (c == '^') {
        Unsupported("'^' in the middle of the pattern", pos_,
                    "'^' may only start the pattern or a top-level alternative; write \\^ for a "
                    "literal caret");
      }
      Node atom = ParseAtom(depth);
      items.push_back(ParseQuantifiers(std::move(atom)));
    }
    return MakeConcat(std::move(items));
  }

  Node ParseAlternation(int depth) {
    std::vector<Node> branches;
    branches.push_back(ParseSequence(depth, nullptr));
    while (Peek('|')) {
      ++pos_;
      branches.push_back(ParseSequence(depth, nullptr));
    }
    return MakeAlt(std::move(branches));
  }

  // Whether a `{...}` at `at` is a counted quantifier: {n}, {n,} or {n,m}. Sets `end` past it.
  // A '{' that is not one is a literal brace (as in PCRE and ECMAScript without the u flag),
  // except {,m}, which the two dialects read differently.
  bool ScanBraces(size_t at, size_t* end) const {
    size_t i = at + 1;
    if (PeekAt(i, ',')) {
      Unsupported("the quantifier {,n}", at,
                  "PCRE and ECMAScript read it differently; write {0,n} for up to n times");
    }
    const size_t digits = i;
    while (i < p_.size() && IsDigit(p_[i])) ++i;
    if (i == digits) return false;
    if (PeekAt(i, ',')) {
      ++i;
      while (i < p_.size() && IsDigit(p_[i])) ++i;
    }
    if (!PeekAt(i, '}')) return false;
    *end = i + 1;
    return true;
  }

  bool AtQuantifier() const {
    if (pos_ >= p_.size()) return false;
    const char c = p_[pos_];
    size_t end = 0;
    return c == '*' || c == '+' || c == '?' || (c == '{' && ScanBraces(pos_, &end));
  }

  // A decimal count; counts too large for the limit saturate (the caller reports them).
  int64_t ParseCount(size_t* i) const {
    int64_t v = 0;
    while (*i < p_.size() && IsDigit(p_[*i])) {
      v = std::min<int64_t>(v * 10 + (p_[*i] - '0'), int64_t{1} << 40);
      ++*i;
    }
    return v;
  }

  Node ParseQuantifiers(Node atom) {
    if (!AtQuantifier()) return atom;
    const size_t q = pos_;
    int64_t min = 0, max = -1;
    const char c = p_[pos_];
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1;
      ++pos_;
    } else if (c == '?') {
      max = 1;
      ++pos_;
    } else {
      size_t end = 0;
      ScanBraces(pos_, &end);
      size_t i = pos_ + 1;
      min = ParseCount(&i);
      if (p_[i] == ',') {
        ++i;
        max = IsDigit(p_[i]) ? ParseCount(&i) : -1;
      } else {
        max = min;
      }
      pos_ = end;
      if (max >= 0 && max < min) Invalid("numbers out of order in the quantifier", q);
      if (min > Grammar::kMaxRepeat || max > Grammar::kMaxRepeat) {
        Unsupported("the repetition count " + std::to_string(std::max(min, max)), q,
                    "the limit is " + std::to_string(Grammar::kMaxRepeat) +
                        "; use * or {n,} for an unbounded count");
      }
    }
    if (Peek('+')) {
      Unsupported("a possessive quantifier", pos_,
                  "it can make PCRE refuse strings the grammar would accept, and ECMAScript has "
                  "none; drop the '+'");
    }
    if (Peek('?')) ++pos_;  // lazy: a full match accepts the same strings
    if (AtQuantifier()) {
      Invalid("a quantifier follows another quantifier (wrap the first in (?:...))", pos_);
    }
    const int64_t factor = std::max<int64_t>(max < 0 ? min : max, 1);
    const int64_t weight = factor * atom.weight;
    if (weight > Grammar::kMaxRepeat) {
      Unsupported("nested repetition", q,
                  "the nested counts multiply to " + std::to_string(weight) +
                      " copies, above the limit of " + std::to_string(Grammar::kMaxRepeat));
    }
    expansion_ += factor;
    if (expansion_ > kMaxExpansion) {
      Unsupported("a total repetition count above " + std::to_string(kMaxExpansion), q,
                  "use fewer or smaller counted repetitions, or * and +");
    }
    return MakeRepeat(std::move(atom), min, max, weight);
  }

  Node ParseAtom(int depth) {
    const size_t start = pos_;
    const char c = p_[pos_];
    switch (c) {
      case '(':
        return ParseGroup(depth);
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return MakeChars(ComplementRanges(NormalizeRanges({{'\n', '\n'}, {'\r', '\r'}})));
      case '\\':
        return ParseEscape();
      case '*':
      case '+':
      case '?':
        Invalid(std::string("nothing to repeat before '") + c + "'", start);
      case '{': {
        size_t end = 0;
        if (ScanBraces(pos_, &end)) Invalid("nothing to repeat before the quantifier", start);
        ++pos_;
        return MakeChars({{'{', '{'}});
      }
      default: {
        const uint32_t cp = NextCodepoint();
        return MakeChars({{cp, cp}});
      }
    }
  }

  Node ParseGroup(int depth) {
    const size_t open = pos_;
    if (depth + 1 > kMaxDepth) {
      Unsupported("a group nested deeper than " + std::to_string(kMaxDepth) + " levels", open,
                  "flatten the pattern");
    }
    ++pos_;
    if (Peek('?')) {
      const size_t q = pos_ + 1;
      const char k = q < p_.size() ? p_[q] : '\0';
      const char k2 = q + 1 < p_.size() ? p_[q + 1] : '\0';
      if (k == ':') {
        pos_ = q + 1;
      } else if (k == '=' || k == '!') {
        Unsupported("the lookahead (?" + std::string(1, k), open,
                    "a grammar cannot look ahead; match the text itself instead");
      } else if (k == '<' && (k2 == '=' || k2 == '!')) {
        Unsupported("the lookbehind (?<" + std::string(1, k2), open,
                    "a grammar cannot look behind");
      } else if (k == '<' || k == '\'' || (k == 'P' && k2 == '<')) {
        Unsupported("a named group", open, "use (...) or (?:...); names do not change the match");
      } else if (k == '>') {
        Unsupported("an atomic group (?>", open, "use (?:...)");
      } else if (k == '#') {
        Unsupported("a comment group (?#", open, "remove the comment");
      } else if (k == '|') {
        Unsupported("a branch-reset group (?|", open, "use (?:...)");
      } else if (k == '(') {
        Unsupported("a conditional group (?(", open, "spell out the alternatives");
      } else if (k == 'R' || IsDigit(k) || k == '&' || k == '+' || (k == 'P' && k2 == '>')) {
        Unsupported("a recursive or subroutine call", open, "use a GBNF grammar for recursion");
      } else if (k == '-' || k == '^' || (k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z')) {
        Unsupported("an inline flag group (?" + std::string(1, k), open,
                    "flags such as case-insensitivity are not supported; spell out the "
                    "alternatives, e.g. [aA]");
      } else {
        Invalid("'(?' is not followed by a known group kind", open);
      }
    }
    Node inner = ParseAlternation(depth + 1);
    if (!Peek(')')) Invalid("missing ')' for the group opened", open);
    ++pos_;
    return inner;
  }

  // \uHHHH (pos_ at the first hex digit), combining a surrogate pair \uD83D\uDE00 into one
  // character as ECMAScript's u flag does.
  uint32_t ParseU4(size_t escape_start) {
    auto hex4 = [&](size_t at, uint32_t* out) {
      uint32_t v = 0;
      for (size_t i = at; i < at + 4; ++i) {
        const int h = i < p_.size() ? HexDigitValue(p_[i]) : -1;
        if (h < 0) return false;
        v = v * 16 + static_cast<uint32_t>(h);
      }
      *out = v;
      return true;
    };
    uint32_t cp = 0;
    if (!hex4(pos_, &cp)) Invalid("\\u needs 4 hex digits or {...}", escape_start);
    pos_ += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && PeekAt(pos_, '\\') && PeekAt(pos_ + 1, 'u')) {
      uint32_t low = 0;
      if (hex4(pos_ + 2, &low) && low >= 0xDC00 && low <= 0xDFFF) {
        pos_ += 6;
        return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
    }
    if (IsSurrogate(cp)) {
      Unsupported("a lone surrogate", escape_start,
                  "characters are matched as UTF-8, which cannot hold a lone surrogate");
    }
    return cp;
  }

  // {H...} after \u or \x (pos_ at '{').
  uint32_t ParseBracedHex(size_t escape_start) {
    size_t i = pos_ + 1;
    uint64_t v = 0;
    const size_t digits = i;
    while (i < p_.size() && HexDigitValue(p_[i]) >= 0) {
      v = std::min<uint64_t>(v * 16 + static_cast<uint64_t>(HexDigitValue(p_[i])), 0x1000000);
      ++i;
    }
    if (i == digits || !PeekAt(i, '}')) Invalid("bad hex escape", escape_start);
    if (v > kMaxCodepoint) Invalid("code point above U+10FFFF", escape_start);
    if (IsSurrogate(static_cast<uint32_t>(v))) {
      Unsupported("a lone surrogate", escape_start,
                  "characters are matched as UTF-8, which cannot hold a lone surrogate");
    }
    pos_ = i + 1;
    return static_cast<uint32_t>(v);
  }

  // An escape, pos_ at the backslash. Returns a character class (a single character is a class
  // of one). `in_class`: inside [...], where \b is backspace.
  Node ParseEscapeNode(bool in_class) {
    const size_t start = pos_;
    if (pos_ + 1 >= p_.size()) Invalid("'\\' at the end of the pattern", start);
    const char e = p_[pos_ + 1];
    pos_ += 2;
    auto one = [](uint32_t cp) { return MakeChars({{cp, cp}}); };
    switch (e) {
      case 'd':
        return MakeChars(DigitRanges());
      case 'D':
        return MakeChars(ComplementRanges(NormalizeRanges(DigitRanges())));
      case 'w':
        return MakeChars(WordRanges());
      case 'W':
        return MakeChars(ComplementRanges(NormalizeRanges(WordRanges())));
      case 's':
        return MakeChars(SpaceRanges());
      case 'S':
        return MakeChars(ComplementRanges(NormalizeRanges(SpaceRanges())));
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'b':
        if (in_class) return one('\b');
        Unsupported("the word boundary \\b", start,
                    "a grammar cannot look at neighbouring characters; match a separator such "
                    "as \\s or [^\\w] instead");
      case 'B':
        Unsupported("the non-word-boundary \\B", start,
                    "a grammar cannot look at neighbouring characters");
      case '0':
        if (pos_ < p_.size() && IsDigit(p_[pos_])) {
          Unsupported("an octal escape", start, "write \\xHH or \\uHHHH");
        }
        return one(0);
      case 'x':
        if (Peek('{')) return one(ParseBracedHex(start));
        if (pos_ + 1 < p_.size() && HexDigitValue(p_[pos_]) >= 0 &&
            HexDigitValue(p_[pos_ + 1]) >= 0) {
          const auto cp =
              static_cast<uint32_t>(HexDigitValue(p_[pos_]) * 16 + HexDigitValue(p_[pos_ + 1]));
          pos_ += 2;
          return one(cp);
        }
        Invalid("\\x needs 2 hex digits", start);
      case 'u':
        if (Peek('{')) return one(ParseBracedHex(start));
        return one(ParseU4(start));
      case 'c': {
        const char l = pos_ < p_.size() ? p_[pos_] : '\0';
        if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
          ++pos_;
          return one(static_cast<uint32_t>(l) % 32);
        }
        Invalid("\\c needs a letter", start);
      }
      case 'p':
      case 'P':
        Unsupported(std::string("the Unicode property escape \\") + e, start,
                    "write the character ranges in a class, e.g. [\\u0370-\\u03FF]");
      case 'k':
      case 'g':
        Unsupported(std::string("the backreference \\") + e, start,
                    "a backreference is not regular; repeat the group's pattern instead");
      case 'A':
      case 'z':
      case 'Z':
      case 'G':
        Unsupported(std::string("the anchor \\") + e, start,
                    "use ^ and $ at the ends of the pattern");
      default:
        break;
    }
    if (e >= '1' && e <= '9') {
      Unsupported(std::string("the backreference \\") + e, start,
                  "a backreference is not regular; repeat the group's pattern instead");
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
      Unsupported(std::string("the escape \\") + e, start,
                  "escape only punctuation; supported letter escapes are \\d \\w \\s \\D \\W \\S "
                  "\\t \\n \\r \\f \\v \\xHH \\uHHHH \\u{H...} \\cX");
    }
    // Any other escaped character (punctuation, a non-ASCII character) stands for itself.
    pos_ = start + 1;
    const uint32_t cp = NextCodepoint();
    return one(cp);
  }

  Node ParseEscape() { return ParseEscapeNode(false); }

  // One class member: a single character (returns true, sets *cp) or a class escape such as \d
  // (returns false, adds its ranges to *set).
  bool ParseClassAtom(uint32_t* cp, Ranges* set) {
    if (Peek('\\')) {
      const size_t start = pos_;
      if (PeekAt(pos_ + 1, 'B')) Invalid("\\B in a character class", start);
      Node n = ParseEscapeNode(true);
      if (n.kind == Node::kChars && n.ranges.size() == 1 &&
          n.ranges[0].first == n.ranges[0].second) {
        // A one-character escape; \d and friends always hold more than one.
        const char e = p_[start + 1];
        if (e != 'd' && e != 'D' && e != 'w' && e != 'W' && e != 's' && e != 'S') {
          *cp = n.ranges[0].first;
          return true;
        }
      }
      set->insert(set->end(), n.ranges.begin(), n.ranges.end());
      return false;
    }
    if (Peek('[') && pos_ + 1 < p_.size() &&
        (p_[pos_ + 1] == ':' || p_[pos_ + 1] == '.' || p_[pos_ + 1] == '=')) {
      Unsupported("a POSIX class [" + std::string(1, p_[pos_ + 1]), pos_,
                  "write the ranges, e.g. [a-zA-Z] for [[:alpha:]]");
    }
    *cp = NextCodepoint();
    return true;
  }

  Node ParseClass() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (Peek('^')) {
      negated = true;
      ++pos_;
    }
    if (Peek(']')) {
      Unsupported(negated ? "the class [^]" : "the empty class []", open,
                  "PCRE and ECMAScript read a leading ']' differently; write \\] for a literal "
                  "bracket, or [\\s\\S] for any character");
    }
    Ranges set;
    while (true) {
      if (pos_ >= p_.size()) Invalid("missing ']' for the class opened", open);
      if (Peek(']')) break;
      const size_t atom_start = pos_;
      uint32_t lo = 0;
      const bool single = ParseClassAtom(&lo, &set);
      if (Peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        const size_t dash = pos_;
        ++pos_;
        uint32_t hi = 0;
        Ranges other;
        const bool single_hi = ParseClassAtom(&hi, &other);
        if (!single || !single_hi) Invalid("a class escape in a range", dash);
        if (hi < lo) Invalid("range out of order in the class", atom_start);
        set.emplace_back(lo, hi);
      } else if (single) {
        set.emplace_back(lo, lo);
      }
    }
    ++pos_;
    set = NormalizeRanges(std::move(set));
    return MakeChars(negated ? ComplementRanges(set) : set);
  }

  std::string_view p_;
  std::string_view source_;
  size_t pos_ = 0;
  int64_t expansion_ = 0;
};

// Writes the AST into the grammar. In json_string_body mode every character becomes its
// JSON.stringify form, so a class splits into raw UTF-8 ranges plus the escaped characters.
class Emitter {
 public:
  Emitter(Grammar& g, bool json) : g_(g), json_(json) {}

  // Appends symbols matching L(n) to `out`.
  //
  // Append and NonEmpty are memoized per node: NonEmpty of a concatenation needs both forms of
  // each child, so without the memo nested nullable groups would be emitted 2^depth times. A
  // result asked for a second time is wrapped into a rule first, so callers share one copy.
  void Append(const Node& n, Sequence& out) {
    if (n.kind == Node::kEmpty || n.kind == Node::kFail || n.kind == Node::kChars) {
      AppendUncached(n, out);
      return;
    }
    const auto it = append_memo_.find(&n);
    if (it != append_memo_.end()) {
      Sequence& seq = it->second;
      if (seq.size() > 1) seq = {Symbol::Rule(g_.Choice({seq}, Name("group")))};
      out.insert(out.end(), seq.begin(), seq.end());
      return;
    }
    Sequence seq;
    AppendUncached(n, seq);
    out.insert(out.end(), seq.begin(), seq.end());
    append_memo_.emplace(&n, std::move(seq));
  }

  // Alternatives matching L(n) without the empty string (none: L(n) is {ε} or empty).
  std::vector<Sequence> NonEmpty(const Node& n) {
    const auto it = non_empty_memo_.find(&n);
    if (it != non_empty_memo_.end()) {
      std::vector<Sequence>& alts = it->second;
      if (!alts.empty() && (alts.size() > 1 || alts[0].size() > 1)) {
        alts = {{Symbol::Rule(g_.Choice(alts, Name("group")))}};
      }
      return alts;
    }
    std::vector<Sequence> alts = NonEmptyUncached(n);
    non_empty_memo_.emplace(&n, alts);
    return alts;
  }

  // Any character (search mode's "anything before / after"), repeated.
  Symbol AnyString() {
    if (any_string_ < 0) {
      any_string_ = g_.Repeat(Symbol::Rule(ClassRule({{0, kMaxCodepoint}})), 0, -1, Name("any"));
    }
    return Symbol::Rule(any_string_);
  }

 private:
  // A rule name suffixed with the id the next rule gets, so it is new and Grammar::AddRule
  // need not search for a free suffix (a search per rule is quadratic in same-named rules).
  std::string Name(std::string_view base) const {
    return std::string(base) + std::to_string(g_.rules().size());
  }

  void AppendUncached(const Node& n, Sequence& out) {
    switch (n.kind) {
      case Node::kEmpty:
      case Node::kFail:
        return;
      case Node::kChars:
        if (n.ranges.size() == 1 && n.ranges[0].first == n.ranges[0].second) {
          g_.AppendLiteral(out, CharText(n.ranges[0].first));
        } else {
          out.push_back(Symbol::Rule(ClassRule(n.ranges)));
        }
        return;
      case Node::kConcat:
        for (const Node& c : n.children) Append(c, out);
        return;
      case Node::kAlt: {
        std::vector<Sequence> alts;
        for (const Node& c : n.children) {
          alts.emplace_back();
          Append(c, alts.back());
        }
        out.push_back(Symbol::Rule(g_.Choice(std::move(alts), Name("group"))));
        return;
      }
      case Node::kRepeat: {
        const Node& child = n.children[0];
        if (child.nullable) {
          // L(X{m,M}) = L(X'{0,M}) where X' is X without the empty string.
          std::vector<Sequence> x = NonEmpty(child);
          if (x.empty()) return;
          out.push_back(Symbol::Rule(g_.Repeat(AsSymbol(std::move(x)), 0, n.max, Name("rep"))));
          return;
        }
        Sequence s;
        Append(child, s);
        out.push_back(Symbol::Rule(g_.Repeat(AsSymbol({std::move(s)}), n.min, n.max, Name("rep"))));
        return;
      }
    }
  }

  std::vector<Sequence> NonEmptyUncached(const Node& n) {
    std::vector<Sequence> result;
    if (n.kind == Node::kEmpty || n.kind == Node::kFail) return result;
    if (!n.nullable) {
      result.emplace_back();
      Append(n, result.back());
      return result;
    }
    switch (n.kind) {
      case Node::kConcat: {
        // Every child is nullable. A non-empty match has a first non-empty child i:
        // NonEmpty(child i) followed by anything of children i+1..; the suffixes are shared
        // rules built right to left, so the grammar stays linear in the children.
        Sequence tail;
        for (size_t k = n.children.size(); k-- > 0;) {
          const Node& c = n.children[k];
          std::vector<Sequence> first = NonEmpty(c);
          if (!first.empty()) {
            Sequence alt{AsSymbol(std::move(first))};
            alt.insert(alt.end(), tail.begin(), tail.end());
            result.push_back(std::move(alt));
          }
          if (k == 0) break;
          Sequence longer;
          Append(c, longer);
          longer.insert(longer.end(), tail.begin(), tail.end());
          tail.clear();
          if (!longer.empty()) tail.push_back(AsSymbol({std::move(longer)}));
        }
        return result;
      }
      case Node::kAlt:
        for (const Node& c : n.children) {
          for (Sequence& s : NonEmpty(c)) result.push_back(std::move(s));
        }
        return result;
      case Node::kRepeat: {
        const Node& child = n.children[0];
        std::vector<Sequence> x;
        if (child.nullable) {
          x = NonEmpty(child);
          if (x.empty()) return result;
        } else {
          x.emplace_back();
          Append(child, x.back());
        }
        result.push_back({Symbol::Rule(g_.Repeat(AsSymbol(std::move(x)), 1, n.max, Name("rep")))});
        return result;
      }
      default:
        return result;
    }
  }

  // One symbol for the alternatives: the symbol itself when there is one alternative of one
  // symbol, else a new rule.
  Symbol AsSymbol(std::vector<Sequence> alts) {
    if (alts.size() == 1 && alts[0].size() == 1) return alts[0][0];
    return Symbol::Rule(g_.Choice(std::move(alts), Name("group")));
  }

  // The text of one character: UTF-8, or its JSON.stringify escape in json_string_body mode.
  std::string CharText(uint32_t cp) const {
    std::string out;
    if (json_ && NeedsJsonEscape(cp)) {
      switch (cp) {
        case '"':
          return "\\\"";
        case '\\':
          return "\\\\";
        case '\b':
          return "\\b";
        case '\f':
          return "\\f";
        case '\n':
          return "\\n";
        case '\r':
          return "\\r";
        case '\t':
          return "\\t";
        default: {
          static const char* kHex = "0123456789abcdef";
          out = "\\u00";
          out += kHex[cp >> 4];
          out += kHex[cp & 15];
          return out;
        }
      }
    }
    AppendUtf8(cp, out);
    return out;
  }

  static bool NeedsJsonEscape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

  int32_t ClassRule(const Ranges& ranges) {
    const auto it = classes_.find(ranges);
    if (it != classes_.end()) return it->second;
    std::vector<Sequence> alts;
    if (!json_) {
      g_.AppendCodepointAlternatives(ranges, alts);
    } else {
      // Raw UTF-8 for all but the escaped characters, then one literal per escaped character.
      static const Ranges kEscaped = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      static const Ranges kRaw = ComplementRanges(kEscaped);
      const Ranges raw = Intersect(ranges, kRaw);
      std::vector<uint32_t> escaped;
      for (const auto& [lo, hi] : Intersect(ranges, kEscaped)) {
        for (uint32_t cp = lo; cp <= hi; ++cp) escaped.push_back(cp);
      }
      if (!raw.empty()) g_.AppendCodepointAlternatives(raw, alts);
      for (const uint32_t cp : escaped) {
        alts.emplace_back();
        g_.AppendLiteral(alts.back(), CharText(cp));
      }
    }
    const int32_t rule = g_.Choice(std::move(alts), Name("class"));
    classes_.emplace(ranges, rule);
    return rule;
  }

  Grammar& g_;
  bool json_;
  std::map<Ranges, int32_t> classes_;
  std::unordered_map<const Node*, Sequence> append_memo_;
  std::unordered_map<const Node*, std::vector<Sequence>> non_empty_memo_;
  int32_t any_string_ = -1;
};

}  // namespace

int32_t CompileRegex(Grammar& grammar, std::string_view pattern, const RegexOptions& options) {
  const std::vector<Branch> branches = Parser(pattern, options).ParseTop();
  if (std::all_of(branches.begin(), branches.end(),
                  [](const Branch& b) { return b.node.kind == Node::kFail; })) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(options.source) +
                    ": the pattern matches no string (it needs a character from an empty class "
                    "such as [^\\s\\S])");
  }
  try {
    Emitter emit(grammar, options.json_string_body);
    std::vector<Sequence> alts;
    for (const Branch& b : branches) {
      if (b.node.kind == Node::kFail) continue;
      Sequence s;
      if (options.search && !b.anchored_start) s.push_back(emit.AnyString());
      emit.Append(b.node, s);
      if (options.search && !b.anchored_end) s.push_back(emit.AnyString());
      alts.push_back(std::move(s));
    }
    return grammar.Choice(std::move(alts), "regex" + std::to_string(grammar.rules().size()));
  } catch (const Error& e) {
    // Grammar's limits (the rule count): say which pattern hit them.
    throw Error(e.code(), std::string(options.source) + ": " + e.what());
  }
}

}  // namespace ebb::constrain
