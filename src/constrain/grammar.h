// constrain/grammar.h — the byte-level context-free grammar every output constraint compiles to.
//
// JSON Schema (json_schema.h), regular expressions (regex.h) and GBNF grammars (gbnf.h) all
// become one Grammar: rules whose alternatives are sequences of symbols, each symbol a rule or a
// terminal. A terminal is a set of bytes, not of characters: a token may end in the middle of a
// UTF-8 character (byte-level BPE, SentencePiece byte fallback), so the matcher (matcher.h)
// advances byte by byte, and a character class becomes alternatives of byte-range sequences
// (AddCodepointRange).
//
// Repetition is expanded into rules (Repeat), so the matcher knows only sequences, alternatives
// and rule references. Validate() refuses what the matcher cannot run: a rule with no
// alternatives, a rule with no finite derivation, and left recursion.
//
// Ownership: a Grammar is a plain value. Thread-safety: none (build it on one thread; a built
// and validated grammar is read-only and may be shared).
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ebb::constrain {

using ByteSet = std::bitset<256>;

// One symbol of an alternative: a terminal (a set of bytes, by index into Grammar::sets()) or a
// reference to a rule (by index into Grammar::rules()).
struct Symbol {
  bool is_rule = false;
  int32_t index = 0;
  static Symbol Bytes(int32_t set) { return {false, set}; }
  static Symbol Rule(int32_t rule) { return {true, rule}; }
  bool operator==(const Symbol&) const = default;
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;                    // for messages and Dump(); unique within the grammar
  std::vector<Sequence> alternatives;  // an empty Sequence is the empty string
};

class Grammar {
 public:
  // Limits that keep a hostile schema or grammar from exhausting memory: AddRule throws
  // InvalidArgument beyond kMaxRules, Repeat beyond kMaxRepeat (a bounded count such as
  // {0,100000}: use * or an unbounded count instead).
  static constexpr int32_t kMaxRules = 200000;
  static constexpr int32_t kMaxRepeat = 10000;

  // A new rule with no alternatives yet. The name is made unique (a numeric suffix is added
  // when taken); read it back with rules()[id].name.
  int32_t AddRule(std::string_view name);
  // The rule whose name is exactly `name`, or -1.
  int32_t FindRule(std::string_view name) const;
  void AddAlternative(int32_t rule, Sequence sequence);

  // A terminal for a set of bytes (equal sets share one index).
  Symbol Bytes(const ByteSet& set);
  Symbol Byte(uint8_t b);
  Symbol ByteRange(uint8_t lo, uint8_t hi);
  // Appends the bytes of `text`, one terminal each.
  void AppendLiteral(Sequence& sequence, std::string_view text);
  // A rule matching exactly `text` (the empty string when empty).
  int32_t Literal(std::string_view text, std::string_view name = "lit");

  // A rule matching `symbol` repeated min to max times (max -1: unbounded). Bounded repetition
  // expands to max-min+1 rules; max above kMaxRepeat throws InvalidArgument.
  int32_t Repeat(Symbol symbol, int64_t min, int64_t max, std::string_view name = "rep");
  // A rule whose alternatives are `alternatives`.
  int32_t Choice(std::vector<Sequence> alternatives, std::string_view name = "alt");

  // A rule matching the UTF-8 encoding of one code point in [lo, hi] (surrogates U+D800-U+DFFF
  // excluded; hi at most U+10FFFF). Only well-formed, shortest-form UTF-8 is accepted.
  int32_t AddCodepointRange(uint32_t lo, uint32_t hi, std::string_view name = "cp");
  // Alternatives for every code point in `ranges` (sorted or not; they may overlap), as
  // sequences of byte terminals appended to `out`. The building block of character classes.
  void AppendCodepointAlternatives(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                                   std::vector<Sequence>& out);

  void set_root(int32_t rule) { root_ = rule; }
  int32_t root() const { return root_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<ByteSet>& sets() const { return sets_; }

  // Throws ebb::Error(InvalidArgument), naming the rule, for: no root, a rule with no
  // alternatives, a rule that derives no finite string (e.g. `a ::= "x" a`), and a left-recursive
  // rule (`a ::= a "x" | "y"`: rewrite it as `a ::= "y" ("x")*`). `source` prefixes the message
  // ("grammar", "json_schema", ...).
  void Validate(std::string_view source) const;

  // The rules of a left-recursive cycle (a rule that can start with itself, through nullable
  // rules), in order along the cycle; empty when there is none. Validate's check, shared with
  // compilers that name the cycle in their own terms (json_schema: the $ref on it).
  std::vector<int32_t> LeftRecursiveCycle() const;

  // A readable GBNF-like listing (tests and --verbose logging).
  std::string Dump() const;

  // Approximate heap bytes held (the constraint cache counts it).
  size_t MemoryBytes() const;

 private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> sets_;
  std::unordered_map<std::string, int32_t> names_;
  std::unordered_map<std::string, int> suffix_;         // base name -> last numeric suffix given
  std::unordered_map<std::string, int32_t> set_index_;  // ByteSet bits as a string -> index
  int32_t root_ = -1;
};

// Code points, for the compilers that build character classes (regex, GBNF, JSON Schema).
constexpr uint32_t kMaxCodepoint = 0x10FFFF;
using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive [lo, hi]
// Appends the UTF-8 encoding of `cp` (at most kMaxCodepoint).
void AppendUtf8(uint32_t cp, std::string& out);
// UTF-16 surrogates: not characters, so never in a class or a literal.
inline bool IsSurrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }
// The value of a hexadecimal digit, -1 for any other character.
int HexDigitValue(char c);
// The code point of the strict UTF-8 sequence at text[pos] (shortest form, no surrogate, at most
// kMaxCodepoint) and its length in bytes, as {cp, length}; length 0 when the bytes there are
// not such a sequence (the pattern compilers report it with its offset).
std::pair<uint32_t, size_t> DecodeUtf8At(std::string_view text, size_t pos);
// Sorted, merged, clipped to kMaxCodepoint, surrogates removed: the canonical form, so equal
// classes compare equal.
CodepointRanges NormalizeRanges(CodepointRanges in);
// Every character (surrogates excluded) not in `in` (normalized).
CodepointRanges ComplementRanges(const CodepointRanges& in);

// True when `text` is in the language of `grammar` (from its root). A plain reference matcher
// for tests and for checking a finished output; generation uses matcher.h.
bool Matches(const Grammar& grammar, std::string_view text);

}  // namespace ebb::constrain
