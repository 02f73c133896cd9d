#include "constrain/grammar.h"

#include <algorithm>
#include <functional>

#include "constrain/matcher.h"
#include "ebb/error.h"

namespace ebb::constrain {

namespace {

[[noreturn]] void Fail(std::string message) {
  throw Error(ErrorCode::InvalidArgument, std::move(message));
}

// Encodes `cp` (at most U+10FFFF) as UTF-8 into `out`; returns the byte count.
int EncodeUtf8(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

int Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Appends byte-range sequences for the code points [lo, hi], all of one UTF-8 length: split the
// range until every byte position of lo and hi spans a whole range of continuation bytes below
// the first differing one (the classic construction, as in RE2's and Go's utf8 range tables).
void SplitSameLength(uint32_t lo, uint32_t hi,
                     std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  const int n = Utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitSameLength(lo, lo | m, out);
        SplitSameLength((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitSameLength(lo, (hi & ~m) - 1, out);
        SplitSameLength(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  EncodeUtf8(lo, a);
  EncodeUtf8(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

void SplitRange(uint32_t lo, uint32_t hi,
                std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  static constexpr uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  if (lo > hi) return;
  // Surrogates are not characters: cut them out.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) SplitRange(lo, 0xD7FF, out);
    if (hi > 0xDFFF) SplitRange(0xE000, hi, out);
    return;
  }
  for (const uint32_t b : kBounds) {
    if (lo <= b && hi > b) {
      SplitRange(lo, b, out);
      SplitRange(b + 1, hi, out);
      return;
    }
  }
  SplitSameLength(lo, hi, out);
}

std::string SetKey(const ByteSet& set) { return set.to_string(); }

}  // namespace

int32_t Grammar::AddRule(std::string_view name) {
  if (rules_.size() >= static_cast<size_t>(kMaxRules)) {
    Fail("the grammar needs more than " + std::to_string(kMaxRules) +
         " rules: simplify it (fewer bounded repetitions, smaller counts)");
  }
  std::string unique(name.empty() ? "rule" : name);
  if (names_.count(unique)) {
    // A counter per base name: Repeat makes thousands of rules of one name, and probing -1, -2,
    // ... for each would be quadratic.
    int& next = suffix_[unique];
    for (;;) {
      std::string candidate = unique + "-" + std::to_string(++next);
      if (!names_.count(candidate)) {
        unique = std::move(candidate);
        break;
      }
    }
  }
  const auto id = static_cast<int32_t>(rules_.size());
  names_.emplace(unique, id);
  rules_.push_back(Rule{std::move(unique), {}});
  return id;
}

int32_t Grammar::FindRule(std::string_view name) const {
  const auto it = names_.find(std::string(name));
  return it == names_.end() ? -1 : it->second;
}

void Grammar::AddAlternative(int32_t rule, Sequence sequence) {
  rules_.at(static_cast<size_t>(rule)).alternatives.push_back(std::move(sequence));
}

Symbol Grammar::Bytes(const ByteSet& set) {
  auto [it, added] = set_index_.emplace(SetKey(set), static_cast<int32_t>(sets_.size()));
  if (added) sets_.push_back(set);
  return Symbol::Bytes(it->second);
}

Symbol Grammar::Byte(uint8_t b) {
  ByteSet s;
  s.set(b);
  return Bytes(s);
}

Symbol Grammar::ByteRange(uint8_t lo, uint8_t hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(static_cast<size_t>(b));
  return Bytes(s);
}

void Grammar::AppendLiteral(Sequence& sequence, std::string_view text) {
  for (const char c : text) sequence.push_back(Byte(static_cast<uint8_t>(c)));
}

int32_t Grammar::Literal(std::string_view text, std::string_view name) {
  const int32_t r = AddRule(name);
  Sequence s;
  AppendLiteral(s, text);
  AddAlternative(r, std::move(s));
  return r;
}

int32_t Grammar::Repeat(Symbol symbol, int64_t min, int64_t max, std::string_view name) {
  if (min < 0 || (max >= 0 && max < min)) {
    Fail("a repetition count {" + std::to_string(min) + "," + std::to_string(max) +
         "} is not valid: the minimum must be 0 or more and at most the maximum");
  }
  if (min > kMaxRepeat || max > kMaxRepeat) {
    Fail("a repetition count of " + std::to_string(std::max(min, max)) + " is above the limit of " +
         std::to_string(kMaxRepeat) + ": use an unbounded repetition (*, +, {n,}) instead");
  }
  const std::string base(name);
  Sequence head(static_cast<size_t>(min), symbol);
  const int32_t result = AddRule(base);
  if (max < 0) {
    // star ::= symbol star | ε
    const int32_t star = AddRule(base + "-star");
    AddAlternative(star, {symbol, Symbol::Rule(star)});
    AddAlternative(star, {});
    head.push_back(Symbol::Rule(star));
  } else if (max > min) {
    // opt_k ::= ε | symbol opt_{k-1}; opt_1 ::= ε | symbol.
    int32_t tail = -1;
    for (int64_t k = 1; k <= max - min; ++k) {
      const int32_t opt = AddRule(base + "-opt");
      Sequence more{symbol};
      if (tail >= 0) more.push_back(Symbol::Rule(tail));
      AddAlternative(opt, std::move(more));
      AddAlternative(opt, {});
      tail = opt;
    }
    head.push_back(Symbol::Rule(tail));
  }
  AddAlternative(result, std::move(head));
  return result;
}

int32_t Grammar::Choice(std::vector<Sequence> alternatives, std::string_view name) {
  const int32_t r = AddRule(name);
  for (auto& a : alternatives) AddAlternative(r, std::move(a));
  return r;
}

void Grammar::AppendCodepointAlternatives(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                                          std::vector<Sequence>& out) {
  // Merge overlapping and adjacent ranges first, so each code point has one path (the matcher
  // stays deterministic on character classes).
  std::vector<std::pair<uint32_t, uint32_t>> sorted = ranges;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : sorted) {
    if (r.first > r.second) continue;
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  for (const auto& [lo, hi] : merged) SplitRange(lo, hi, seqs);
  // Single-byte sequences share one terminal (an ASCII class is one set, not one per range).
  ByteSet single;
  bool any_single = false;
  for (const auto& seq : seqs) {
    if (seq.size() == 1) {
      for (int b = seq[0].first; b <= seq[0].second; ++b) single.set(static_cast<size_t>(b));
      any_single = true;
    }
  }
  if (any_single) out.push_back({Bytes(single)});
  for (const auto& seq : seqs) {
    if (seq.size() == 1) continue;
    Sequence s;
    for (const auto& [lo, hi] : seq) s.push_back(ByteRange(lo, hi));
    out.push_back(std::move(s));
  }
}

int32_t Grammar::AddCodepointRange(uint32_t lo, uint32_t hi, std::string_view name) {
  std::vector<Sequence> alts;
  AppendCodepointAlternatives({{lo, hi}}, alts);
  if (alts.empty()) {
    Fail("the code point range U+" + std::to_string(lo) + "..U+" + std::to_string(hi) +
         " holds no character");
  }
  return Choice(std::move(alts), name);
}

void Grammar::Validate(std::string_view source) const {
  const std::string src(source);
  if (root_ < 0 || static_cast<size_t>(root_) >= rules_.size()) {
    Fail(src + ": the grammar has no root rule");
  }
  const size_t n = rules_.size();
  for (const Rule& r : rules_) {
    if (r.alternatives.empty()) Fail(src + ": rule '" + r.name + "' has no alternatives");
  }
  // Productive rules (derive a finite string): a fixed point.
  std::vector<char> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (productive[i]) continue;
      for (const Sequence& alt : rules_[i].alternatives) {
        if (std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
              return !s.is_rule || productive[static_cast<size_t>(s.index)];
            })) {
          productive[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  // Only rules reachable from the root matter.
  std::vector<char> reachable(n, 0);
  std::vector<int32_t> todo{root_};
  reachable[static_cast<size_t>(root_)] = 1;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    for (const Sequence& alt : rules_[static_cast<size_t>(r)].alternatives) {
      for (const Symbol& s : alt) {
        if (s.is_rule && !reachable[static_cast<size_t>(s.index)]) {
          reachable[static_cast<size_t>(s.index)] = 1;
          todo.push_back(s.index);
        }
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (reachable[i] && !productive[i]) {
      Fail(src + ": rule '" + rules_[i].name +
           "' never ends (every alternative refers back to a rule that never ends): give it an "
           "alternative without the recursion");
    }
  }
  const std::vector<int32_t> cycle = LeftRecursiveCycle();
  if (!cycle.empty()) {
    Fail(src + ": rule '" + rules_[static_cast<size_t>(cycle.front())].name +
         "' is left-recursive (it can start with itself): rewrite `a ::= a x | y` as "
         "`a ::= y x*`");
  }
}

std::vector<int32_t> Grammar::LeftRecursiveCycle() const {
  const size_t n = rules_.size();
  // Nullable rules (derive the empty string).
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (nullable[i]) continue;
      for (const Sequence& alt : rules_[i].alternatives) {
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
  // Left recursion: a cycle in "rule A can start with rule B".
  std::vector<std::vector<int32_t>> left(n);
  for (size_t i = 0; i < n; ++i) {
    for (const Sequence& alt : rules_[i].alternatives) {
      for (const Symbol& s : alt) {
        if (!s.is_rule) break;
        left[i].push_back(s.index);
        if (!nullable[static_cast<size_t>(s.index)]) break;
      }
    }
  }
  std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    // Iterative DFS: (rule, next edge).
    std::vector<std::pair<int32_t, size_t>> path{{static_cast<int32_t>(start), 0}};
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, e] = path.back();
      if (e < left[static_cast<size_t>(r)].size()) {
        const int32_t next = left[static_cast<size_t>(r)][e++];
        if (color[static_cast<size_t>(next)] == 1) {
          std::vector<int32_t> cycle;
          auto from = std::find_if(path.begin(), path.end(),
                                   [&](const auto& p) { return p.first == next; });
          for (; from != path.end(); ++from) cycle.push_back(from->first);
          return cycle;
        }
        if (color[static_cast<size_t>(next)] == 0) {
          color[static_cast<size_t>(next)] = 1;
          path.emplace_back(next, 0);
        }
      } else {
        color[static_cast<size_t>(r)] = 2;
        path.pop_back();
      }
    }
  }
  return {};
}

std::string Grammar::Dump() const {
  auto set_text = [&](const ByteSet& s) {
    std::string out = "[";
    for (int b = 0; b < 256; ++b) {
      if (!s.test(static_cast<size_t>(b))) continue;
      int e = b;
      while (e + 1 < 256 && s.test(static_cast<size_t>(e + 1))) ++e;
      auto one = [&](int c) {
        if (c >= 0x21 && c < 0x7F && c != '\\' && c != ']' && c != '-' && c != '^') {
          out += static_cast<char>(c);
        } else {
          static const char* hex = "0123456789ABCDEF";
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        }
      };
      one(b);
      if (e > b) {
        out += '-';
        one(e);
      }
      b = e;
    }
    return out + "]";
  };
  std::string out;
  for (size_t i = 0; i < rules_.size(); ++i) {
    out += rules_[i].name + (static_cast<int32_t>(i) == root_ ? " (root)" : "") + " ::=";
    for (size_t a = 0; a < rules_[i].alternatives.size(); ++a) {
      if (a) out += " |";
      for (const Symbol& s : rules_[i].alternatives[a]) {
        out += ' ';
        out += s.is_rule ? rules_[static_cast<size_t>(s.index)].name
                         : set_text(sets_[static_cast<size_t>(s.index)]);
      }
      if (rules_[i].alternatives[a].empty()) out += " \"\"";
    }
    out += '\n';
  }
  return out;
}

size_t Grammar::MemoryBytes() const {
  size_t bytes = sizeof(*this) + sets_.capacity() * sizeof(ByteSet);
  for (const Rule& r : rules_) {
    bytes += sizeof(Rule) + r.name.capacity() + r.alternatives.capacity() * sizeof(Sequence);
    for (const Sequence& s : r.alternatives) bytes += s.capacity() * sizeof(Symbol);
  }
  bytes += (names_.size() + set_index_.size()) * 64;
  return bytes;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  uint8_t b[4];
  const int n = EncodeUtf8(cp, b);
  out.append(reinterpret_cast<const char*>(b), static_cast<size_t>(n));
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::pair<uint32_t, size_t> DecodeUtf8At(std::string_view text, size_t pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  const size_t len = b0 < 0x80             ? 1
                     : (b0 & 0xE0) == 0xC0 ? 2
                     : (b0 & 0xF0) == 0xE0 ? 3
                     : (b0 & 0xF8) == 0xF0 ? 4
                                           : 0;
  if (len == 0 || pos + len > text.size()) return {0, 0};
  uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
  for (size_t i = 1; i < len; ++i) {
    const auto b = static_cast<uint8_t>(text[pos + i]);
    if ((b & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > kMaxCodepoint || IsSurrogate(cp)) return {0, 0};
  return {cp, len};
}

CodepointRanges NormalizeRanges(CodepointRanges in) {
  CodepointRanges split;
  for (auto [lo, hi] : in) {
    hi = std::min(hi, kMaxCodepoint);
    if (lo > hi) continue;
    if (lo < 0xD800 && hi >= 0xD800) {
      split.emplace_back(lo, 0xD7FF);
      lo = 0xD800;
    }
    if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
    if (lo <= hi) split.emplace_back(lo, hi);
  }
  std::sort(split.begin(), split.end());
  CodepointRanges out;
  for (const auto& r : split) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodepointRanges ComplementRanges(const CodepointRanges& in) {
  CodepointRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : in) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.emplace_back(next, kMaxCodepoint);
  return NormalizeRanges(std::move(out));
}

bool Matches(const Grammar& grammar, std::string_view text) {
  const FlatGrammar flat(grammar);
  Matcher m(flat);
  for (const char c : text) {
    if (!m.Advance(static_cast<uint8_t>(c))) return false;
  }
  return m.IsAccepting();
}

}  // namespace ebb::constrain
