// Tests of constrain/regex.h: CompileRegex's language, checked with the reference acceptor
// Matches(), and a differential test against PCRE2 (full match and search) on random strings.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "constrain/regex.h"

#include <gtest/gtest.h>
#include <pcre2.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "constrain/grammar.h"
#include "ebb/error.h"

namespace ebb::constrain {
namespace {

Grammar Compile(std::string_view pattern, bool search = false, bool json = false) {
  Grammar g;
  RegexOptions options;
  options.search = search;
  options.json_string_body = json;
  g.set_root(CompileRegex(g, pattern, options));
  g.Validate("regex");
  return g;
}

// The message CompileRegex throws for `pattern` ("" when it does not throw).
std::string ErrorOf(std::string_view pattern, std::string_view source = "regex") {
  try {
    Grammar g;
    RegexOptions options;
    options.source = source;
    CompileRegex(g, pattern, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  return "";
}

struct Case {
  const char* pattern;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

void ExpectCases(const std::vector<Case>& cases, bool search = false) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    const Grammar g = Compile(c.pattern, search);
    for (const std::string& s : c.accept) EXPECT_TRUE(Matches(g, s)) << "should accept: " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(Matches(g, s)) << "should reject: " << s;
  }
}

TEST(Regex, AcceptRejectTable) {
  ExpectCases({
      {"abc", {"abc"}, {"", "ab", "abcd", "xabc", "ABC"}},
      {"", {""}, {"a"}},
      {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
      {"ab*c", {"ac", "abc", "abbbbc"}, {"a", "abbb", "bc"}},
      {"ab+c", {"abc", "abbc"}, {"ac"}},
      {"colou?r", {"color", "colour"}, {"colouur"}},
      {"a{3}", {"aaa"}, {"aa", "aaaa"}},
      {"a{2,3}", {"aa", "aaa"}, {"a", "aaaa"}},
      {"a{2,}", {"aa", "aaaaaaaaaa"}, {"a", ""}},
      {"a{0}b", {"b"}, {"ab"}},
      {"a{0,0}", {""}, {"a"}},
      {"(ab|cd)+", {"ab", "cdab", "abcdcd"}, {"", "ac", "abc"}},
      {"(?:x|y)z", {"xz", "yz"}, {"z", "xyz"}},
      {"a*?b+?c??", {"b", "aabbc"}, {"", "ac"}},
      {"x{", {"x{"}, {"x"}},
      {"a}]", {"a}]"}, {"a"}},
      {"a{1,2}{", {"a{", "aa{"}, {"aaa{"}},
      {"[abc]", {"a", "b", "c"}, {"d", "", "ab"}},
      {"[a-cx-z]+", {"abxz", "c"}, {"d", "w"}},
      {"[-a]", {"-", "a"}, {"b"}},
      {"[a-]", {"-", "a"}, {"b"}},
      {"[\\]\\[]", {"]", "["}, {"\\"}},
      {"[.*+?]", {".", "*", "+", "?"}, {"a"}},
      {"[\\d.-]+", {"1.5", "-2"}, {"a"}},
      {"[\\b]", {"\b"}, {"b"}},
      {"\\d\\D\\w\\W\\s\\S", {"1a_ \t!", "9xZ\n\nq"}, {"aa_ \t!", "1a_a\t!"}},
      {"\\t\\n\\r\\f\\v\\0", {std::string("\t\n\r\f\v\0", 6)}, {"tnrfv0"}},
      {"\\x41\\x{42}\\u0043\\u{44}", {"ABCD"}, {"x41"}},
      {"\\cA\\cz", {"\x01\x1a"}, {"cAcz"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-", {".*+?()[]{}|^$\\/-"}, {""}},
      {"a.c",
       {"abc", "a c",
        "a\xc3\xa9"
        "c",
        "a\xf0\x9f\x98\x80"
        "c"},
       {"a\nc", "a\rc", "ac"}},
      {"^abc$", {"abc"}, {"xabc", "abcx"}},
      {"^a|b$", {"a", "b"}, {"ab", "xb"}},
  });
}

TEST(Regex, NullableRepetitionsTerminate) {
  // X* with a nullable X must not become a left-recursive rule (Validate would refuse it).
  ExpectCases({
      {"(a*)*", {"", "a", "aaaa"}, {"b"}},
      {"(a*)+b", {"b", "aab"}, {"a"}},
      {"(a?b?)*c", {"c", "abc", "bbac", "aabbc"}, {"ab", "cc"}},
      {"(a|)+", {"", "a", "aa"}, {"b"}},
      {"(()|a)*", {"", "aaa"}, {"b"}},
      {"()*x()+", {"x"}, {"", "xx"}},
      {"((a?)?)*", {"", "aaa"}, {"b"}},
      {"(a?b?c?){2,3}", {"", "abcabc", "cba", "abcabcabc"}, {"abcabcabca", "cbacb"}},
      {"((a*b*)*c?)*", {"", "abcab", "cccc"}, {"d"}},
      {"(?:(?:a?)*(?:b?)*)+c", {"c", "abbac"}, {""}},
  });
}

TEST(Regex, UnicodeClasses) {
  const std::string e_acute = "\xc3\xa9";         // U+00E9, 2 bytes
  const std::string euro = "\xe2\x82\xac";        // U+20AC, 3 bytes
  const std::string grin = "\xf0\x9f\x98\x80";    // U+1F600, 4 bytes
  const std::string alpha = "\xce\xb1";           // U+03B1
  const std::string omega = "\xcf\x89";           // U+03C9
  const std::string nbsp = "\xc2\xa0";            // U+00A0 (ECMAScript \s)
  const std::string ideo_space = "\xe3\x80\x80";  // U+3000 (ECMAScript \s)
  ExpectCases({
      {"[^a]", {"b", e_acute, euro, grin, "\n"}, {"a", "", "bb"}},
      {"[^a-z]+", {e_acute + euro + grin + "A"}, {"a", e_acute + "q"}},
      {"[\xce\xb1-\xcf\x89]+", {alpha + omega}, {"a", e_acute}},
      {"\\u03b1-\\u03c9", {alpha + "-" + omega}, {alpha}},
      {"[\\u{1F600}-\\u{1F64F}]", {grin}, {euro, "\xf0\x9f\x98"}},
      {"\\uD83D\\uDE00", {grin}, {""}},
      {"[\\uD83D\\uDE00a]", {grin, "a"}, {"\xed\xa0\xbd"}},
      {"\xf0\x9f\x98\x80+", {grin, grin + grin}, {""}},
      {"[\\s]", {" ", "\t", "\v", nbsp, ideo_space, "\xef\xbb\xbf"}, {"a", e_acute}},
      {"\\S", {"a", e_acute, grin}, {" ", nbsp, ideo_space}},
      {"\\W", {e_acute, grin, "-"}, {"a", "_", "0"}},
      {".", {e_acute, euro, grin, "\x7f", std::string(1, '\0')}, {"\n", "\r"}},
      {"[\\s\\S]", {"\n", grin}, {""}},
      {"[^\\x00-\\x7F]", {e_acute, euro, grin}, {"a", "\x7f"}},
  });
  // Malformed UTF-8 is never accepted: overlong forms, surrogates, stray continuation bytes.
  const Grammar any = Compile("[\\s\\S]*");
  EXPECT_TRUE(Matches(any, e_acute + grin + "x\x7f"));
  for (const std::string bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\x80",
                                "\xf4\x90\x80\x80", "\xc3", "\xf0\x9f\x98"}) {
    EXPECT_FALSE(Matches(any, bad)) << "bytes: " << bad.size();
  }
}

TEST(Regex, SearchModeAddsAnythingOnUnanchoredSides) {
  const Grammar plain = Compile("ab", true);
  for (const char* s : {"ab", "xab", "abx", "xxabyy", "aab"}) EXPECT_TRUE(Matches(plain, s)) << s;
  for (const char* s : {"", "a", "ba", "a b"}) EXPECT_FALSE(Matches(plain, s)) << s;

  const Grammar start = Compile("^ab", true);
  EXPECT_TRUE(Matches(start, "ab"));
  EXPECT_TRUE(Matches(start, "abxyz"));
  EXPECT_FALSE(Matches(start, "xab"));

  const Grammar end = Compile("ab$", true);
  EXPECT_TRUE(Matches(end, "xyzab"));
  EXPECT_FALSE(Matches(end, "abx"));

  const Grammar both = Compile("^ab$", true);
  EXPECT_TRUE(Matches(both, "ab"));
  EXPECT_FALSE(Matches(both, "xab"));
  EXPECT_FALSE(Matches(both, "abx"));

  // Anchors belong to each top-level alternative.
  const Grammar alts = Compile("^a|b$", true);
  EXPECT_TRUE(Matches(alts, "a\xf0\x9f\x98\x80"));
  EXPECT_TRUE(Matches(alts,
                      "\xf0\x9f\x98\x80"
                      "b"));
  EXPECT_FALSE(Matches(alts, "xa"));
  EXPECT_FALSE(Matches(alts, "bx"));

  // An empty search pattern matches every string; full mode only the empty one.
  EXPECT_TRUE(Matches(Compile("", true), "anything\n"));
  EXPECT_FALSE(Matches(Compile("", false), "x"));

  // Full mode: the anchors are implied, "xab" is no match.
  EXPECT_FALSE(Matches(Compile("ab", false), "xab"));
  EXPECT_TRUE(Matches(Compile("^ab$", false), "ab"));
}

// JSON.stringify's escaping of `s` (without the quotes): the canonical form json_string_body
// mode matches.
std::string JsonBody(std::string_view s) {
  // nlohmann's encoder escapes exactly JSON.stringify's set; written independently of ebb's.
  const std::string quoted = nlohmann::json(std::string(s)).dump();
  return quoted.substr(1, quoted.size() - 2);
}

TEST(Regex, JsonStringBodyEscapes) {
  const Grammar quote = Compile("a\"b\\\\c", false, true);  // the characters a " b \ c
  EXPECT_TRUE(Matches(quote, "a\\\"b\\\\c"));
  EXPECT_FALSE(Matches(quote, "a\"b\\c"));

  const Grammar controls = Compile("\\x08\\f\\n\\r\\t\\x01\\x1F\\0", false, true);
  EXPECT_TRUE(Matches(controls, "\\b\\f\\n\\r\\t\\u0001\\u001f\\u0000"));
  EXPECT_FALSE(Matches(controls, "\\b\\f\\n\\r\\t\\u0001\\u001F\\u0000"));  // upper-case hex
  EXPECT_FALSE(Matches(controls, "\b\f\n\r\t\x01\x1f"));

  // A class holding escaped characters takes their escapes, not the raw bytes.
  const Grammar cls = Compile("[\\s\"]+", false, true);
  EXPECT_TRUE(Matches(cls, "\\n\\t \\\"\\u000b\xc2\xa0"));
  EXPECT_FALSE(Matches(cls, "\n"));
  EXPECT_FALSE(Matches(cls, "\""));

  // Any character: every code point raw except the escaped ones; no other escapes (\/ \u0041
  // are JSON but not canonical).
  const Grammar any = Compile("[\\s\\S]*", false, true);
  EXPECT_TRUE(Matches(any, "plain \xf0\x9f\x98\x80 \\\\ \\\" \\n"));
  EXPECT_TRUE(Matches(any, "\x7f"));
  EXPECT_FALSE(Matches(any, "\\/"));
  EXPECT_FALSE(Matches(any, "\\u0041"));
  EXPECT_FALSE(Matches(any, "\""));
  EXPECT_FALSE(Matches(any, "\\"));
  EXPECT_FALSE(Matches(any, "\x1f"));

  // Negated classes: [^"] still holds the backslash, written \\.
  const Grammar not_quote = Compile("[^\"]*", false, true);
  EXPECT_TRUE(Matches(not_quote, "a\\\\b\\n"));
  EXPECT_FALSE(Matches(not_quote, "a\\\"b"));

  // Search mode: the "anything" around the match is JSON-escaped too.
  const Grammar search = Compile("^x", true, true);
  EXPECT_TRUE(Matches(search, "x\\\"\\n"));
  EXPECT_FALSE(Matches(search, "x\""));
}

TEST(Regex, UnsupportedConstructsNameThemselvesAndTheirOffset) {
  struct Bad {
    const char* pattern;
    const char* expect;
  };
  for (const Bad& b : std::vector<Bad>{
           {"(a)\\1", "the backreference \\1 at offset 3 is not supported"},
           {"(?<n>a)\\k<n>", "a named group at offset 0 is not supported"},
           {"a\\k<n>", "the backreference \\k at offset 1 is not supported"},
           {"x(?=a)", "the lookahead (?= at offset 1 is not supported"},
           {"x(?!a)", "the lookahead (?! at offset 1 is not supported"},
           {"(?<=a)x", "the lookbehind (?<= at offset 0 is not supported"},
           {"(?<!a)x", "the lookbehind (?<! at offset 0 is not supported"},
           {"(?P<n>a)", "a named group at offset 0 is not supported"},
           {"(?'n'a)", "a named group at offset 0 is not supported"},
           {"(?i)abc", "an inline flag group (?i at offset 0 is not supported"},
           {"(?>a)", "an atomic group (?> at offset 0 is not supported"},
           {"(?#c)a", "a comment group (?# at offset 0 is not supported"},
           {"(?|a)", "a branch-reset group (?| at offset 0 is not supported"},
           {"(?(1)a|b)", "a conditional group (?( at offset 0 is not supported"},
           {"(?R)", "a recursive or subroutine call at offset 0 is not supported"},
           {"a\\bc", "the word boundary \\b at offset 1 is not supported"},
           {"a\\Bc", "the non-word-boundary \\B at offset 1 is not supported"},
           {"a^b", "'^' in the middle of the pattern at offset 1 is not supported"},
           {"(^a)", "'^' in the middle of the pattern at offset 1 is not supported"},
           {"a$b", "'$' in the middle of the pattern at offset 1 is not supported"},
           {"(a$)", "'$' in the middle of the pattern at offset 2 is not supported"},
           {"a++", "a possessive quantifier at offset 2 is not supported"},
           {"a{2}+", "a possessive quantifier at offset 4 is not supported"},
           {"\\p{L}", "the Unicode property escape \\p at offset 0 is not supported"},
           {"\\P{L}", "the Unicode property escape \\P at offset 0 is not supported"},
           {"\\01", "an octal escape at offset 0 is not supported"},
           {"\\Aa\\z", "the anchor \\A at offset 0 is not supported"},
           {"\\e", "the escape \\e at offset 0 is not supported"},
           {"\\q", "the escape \\q at offset 0 is not supported"},
           {"[]a]", "the empty class [] at offset 0 is not supported"},
           {"[^]", "the class [^] at offset 0 is not supported"},
           {"[[:alpha:]]", "a POSIX class [: at offset 1 is not supported"},
           {"a{,3}", "the quantifier {,n} at offset 1 is not supported"},
           {"\\uD800", "a lone surrogate at offset 0 is not supported"},
           {"\\u{DFFF}", "a lone surrogate at offset 0 is not supported"},
           {"a{10001}", "the repetition count 10001 at offset 1 is not supported"},
           {"a{1,99999999999999999999}", "the repetition count"},
           {"(a{1000}){1000}", "nested repetition at offset 9 is not supported"},
           {"((a{10}){10}){101}", "nested repetition at offset 13 is not supported"},
       }) {
    const std::string message = ErrorOf(b.pattern);
    EXPECT_NE(message.find(b.expect), std::string::npos) << b.pattern << " -> " << message;
    EXPECT_EQ(message.rfind("regex: ", 0), 0u) << message;
    // Every refusal carries a hint in parentheses.
    EXPECT_NE(message.find(" is not supported ("), std::string::npos) << message;
  }
  // The source names the schema location.
  EXPECT_EQ(ErrorOf("\\1", "json_schema: /properties/id/pattern")
                .rfind("json_schema: /properties/id/pattern: the backreference", 0),
            0u);
}

TEST(Regex, InvalidSyntaxIsReported) {
  struct Bad {
    const char* pattern;
    const char* expect;
  };
  for (const Bad& b : std::vector<Bad>{
           {"a)b", "unmatched ')' at offset 1"},
           {"(a", "missing ')' for the group opened at offset 0"},
           {"((a)", "missing ')' for the group opened at offset 0"},
           {"[abc", "missing ']' for the class opened at offset 0"},
           {"[z-a]", "range out of order in the class at offset 1"},
           {"[\\d-z]", "a class escape in a range at offset 3"},
           {"[a-\\w]", "a class escape in a range at offset 2"},
           {"*a", "nothing to repeat before '*' at offset 0"},
           {"a|+", "nothing to repeat before '+' at offset 2"},
           {"(?)", "'(?' is not followed by a known group kind at offset 0"},
           {"^*", "nothing to repeat before '*' at offset 1"},
           {"{2}", "nothing to repeat before the quantifier at offset 0"},
           {"a**", "a quantifier follows another quantifier"},
           {"a{2}{3}", "a quantifier follows another quantifier"},
           {"a??+", "a quantifier follows another quantifier"},
           {"a{3,2}", "numbers out of order in the quantifier at offset 1"},
           {"a\\", "'\\' at the end of the pattern at offset 1"},
           {"\\x4", "\\x needs 2 hex digits at offset 0"},
           {"\\u12", "\\u needs 4 hex digits or {...} at offset 0"},
           {"\\u{}", "bad hex escape at offset 0"},
           {"\\u{110000}", "code point above U+10FFFF at offset 0"},
           {"\\c1", "\\c needs a letter at offset 0"},
           {"[\\B]", "\\B in a character class at offset 1"},
           {"ab\xff", "invalid UTF-8 at offset 2"},
           {"\xc3(", "invalid UTF-8 at offset 0"},
           {"\xed\xa0\x80", "invalid UTF-8 at offset 0"},
           {"\xc0\xaf", "invalid UTF-8 at offset 0"},
       }) {
    const std::string message = ErrorOf(b.pattern);
    EXPECT_EQ(message.rfind("regex: the pattern is not a valid regular expression: ", 0), 0u)
        << b.pattern << " -> " << message;
    EXPECT_NE(message.find(b.expect), std::string::npos) << b.pattern << " -> " << message;
  }
  EXPECT_NE(ErrorOf("[^\\s\\S]").find("regex: the pattern matches no string"), std::string::npos);
  EXPECT_EQ(ErrorOf("a|[^\\s\\S]"), "");
  EXPECT_TRUE(Matches(Compile("a|[^\\s\\S]"), "a"));
  EXPECT_TRUE(Matches(Compile("a[^\\s\\S]?b"), "ab"));
}

TEST(Regex, BlowUpGuards) {
  // Nesting: 256 levels compile, deeper ones are refused (no unbounded recursion).
  const std::string deep = std::string(256, '(') + "a" + std::string(256, ')');
  EXPECT_TRUE(Matches(Compile(deep), "a"));
  const std::string deeper = std::string(100000, '(') + "a" + std::string(100000, ')');
  EXPECT_NE(ErrorOf(deeper).find("a group nested deeper than 256 levels at offset 256 is not "
                                 "supported"),
            std::string::npos);
  // Nested counts multiply: 100 x 100 is at the limit, 100 x 101 above it.
  EXPECT_TRUE(Matches(Compile("(a{100}){100}"), std::string(10000, 'a')));
  EXPECT_NE(ErrorOf("(a{100}){101}").find("nested repetition"), std::string::npos);
  EXPECT_NE(ErrorOf("(?:(?:a{2,}){100}){101}").find("nested repetition"), std::string::npos);
  // Many groups: Grammar's rule limit, reported with the source.
  std::string many;
  for (int i = 0; i < Grammar::kMaxRules; ++i) many += "(a|b)";
  EXPECT_EQ(ErrorOf(many).rfind("regex: the grammar needs more than 200000 rules", 0), 0u);
  // Many minimum counts (no rules, but long sequences): the pattern's total expansion limit.
  std::string long_seq;
  for (int i = 0; i < 101; ++i) long_seq += "a{10000}";
  EXPECT_NE(ErrorOf(long_seq).find("a total repetition count above 1000000"), std::string::npos);
  // Nested nullable groups are emitted once each, not 2^depth times. (Matching such a pattern
  // is another matter: the matcher keeps one stack per distinct parse, and this nesting is
  // ambiguous, so match only a shallow one.)
  auto nested = [](int depth) {
    std::string p;
    for (int i = 0; i < depth; ++i) p += "(a?";
    for (int i = 0; i < depth; ++i) p += "b?)*";
    return p;
  };
  EXPECT_LT(Compile(nested(200)).rules().size(), 20000u);
  const Grammar g = Compile(nested(5));
  EXPECT_TRUE(Matches(g, "abba"));
  EXPECT_FALSE(Matches(g, "abc"));
}

TEST(Regex, CompilesIntoAnExistingGrammar) {
  // Two patterns in one grammar: their rules do not clash.
  Grammar g;
  const int32_t a = CompileRegex(g, "[a-c]+", {});
  const int32_t b = CompileRegex(g, "[a-c]+x|y", {});
  const int32_t root = g.Choice({{Symbol::Rule(a), g.Byte('-'), Symbol::Rule(b)}}, "root");
  g.set_root(root);
  g.Validate("regex");
  EXPECT_TRUE(Matches(g, "abc-cax"));
  EXPECT_TRUE(Matches(g, "a-y"));
  EXPECT_FALSE(Matches(g, "a-a"));
}

// ---- Differential test against PCRE2 ----

class Pcre {
 public:
  Pcre(const std::string& pattern, bool full) : full_(full) {
    pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
    // `.` excludes \r and \n (as regex.h's dot does); $ is the absolute end (ECMAScript's).
    pcre2_set_newline(ctx, PCRE2_NEWLINE_ANYCRLF);
    // \uHHHH as in ECMAScript.
    pcre2_set_compile_extra_options(ctx, PCRE2_EXTRA_ALT_BSUX);
    int err = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX, &err, &offset, ctx);
    pcre2_compile_context_free(ctx);
    if (code_ == nullptr) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof buf);
      ADD_FAILURE() << "PCRE2 refused " << pattern << ": " << reinterpret_cast<char*>(buf);
      return;
    }
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  Pcre(const Pcre&) = delete;
  Pcre& operator=(const Pcre&) = delete;

  bool Match(const std::string& s) const {
    if (code_ == nullptr) return false;
    const uint32_t opts = full_ ? (PCRE2_ANCHORED | PCRE2_ENDANCHORED) : 0;
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, opts,
                               data_, nullptr);
    EXPECT_TRUE(rc >= 0 || rc == PCRE2_ERROR_NOMATCH) << "pcre2_match error " << rc;
    return rc >= 0;
  }

 private:
  bool full_;
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

struct Differential {
  std::string pattern;
  std::vector<std::string> alphabet;  // characters (UTF-8) the random strings are drawn from
};

// Random strings of 0..max_len characters of `alphabet`, plus every string of up to 2.
std::vector<std::string> RandomStrings(const std::vector<std::string>& alphabet, std::mt19937& rng,
                                       int count, int max_len) {
  std::vector<std::string> out{""};
  for (const std::string& a : alphabet) {
    out.push_back(a);
    for (const std::string& b : alphabet) out.push_back(a + b);
  }
  std::uniform_int_distribution<int> len(0, max_len);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  for (int i = 0; i < count; ++i) {
    std::string s;
    for (int n = len(rng); n > 0; --n) s += alphabet[pick(rng)];
    out.push_back(std::move(s));
  }
  return out;
}

const std::vector<Differential>& DifferentialPatterns() {
  static const std::string e = "\xc3\xa9", euro = "\xe2\x82\xac", grin = "\xf0\x9f\x98\x80";
  static const std::vector<Differential> kPatterns = {
      {"abc", {"a", "b", "c"}},
      {"a|b|cd", {"a", "b", "c", "d"}},
      {"a*", {"a", "b"}},
      {"a+b?", {"a", "b"}},
      {"(ab)*", {"a", "b"}},
      {"(a|b)*abb", {"a", "b"}},
      {"a{3}", {"a", "b"}},
      {"a{2,4}b", {"a", "b"}},
      {"(?:ab){2,}", {"a", "b"}},
      {"(a|bc){1,3}", {"a", "b", "c"}},
      {"[a-c]+d", {"a", "b", "c", "d", "e"}},
      {"[^a-c]*", {"a", "c", "d", e, grin, "\n"}},
      {"\\d+(\\.\\d*)?", {"0", "7", ".", "a"}},
      {"\\w+", {"a", "Z", "_", "9", "-", e}},
      {"\\s*x\\s*", {" ", "\t", "\n", "\v", "\f", "\r", "x", "y"}},
      {".*", {"a", "\n", "\r", e, grin}},
      {"a.c", {"a", "c", "\n", e}},
      {"(a*)*b", {"a", "b"}},
      {"(a?b?)*c", {"a", "b", "c"}},
      {"(a|)+b", {"a", "b"}},
      {"((a|b)?c?){2,3}", {"a", "b", "c"}},
      {"x(y(z)?)*", {"x", "y", "z"}},
      {"[\\d.-]+", {"1", ".", "-", "a"}},
      {"[-a]+[b-]", {"-", "a", "b"}},
      {"(?:ab|a)(?:bc|c)", {"a", "b", "c"}},
      {"a*?b+?c??", {"a", "b", "c"}},
      {"[\xce\xb1-\xcf\x89]+a", {"\xce\xb1", "\xcf\x80", "\xcf\x89", "a", e}},
      {"[^\\x00-\\x7F]+", {"a", e, euro, grin}},
      {"\\u00e9|\\x41+", {"A", e, "a"}},
      {"\xf0\x9f\x98\x80+|\xc3\xa9", {grin, e, "a"}},
      {"[\\s\\S]b", {"b", "\n", grin}},
      {"[^\\d\\s]+", {"1", " ", "a", e, "\t"}},
      {"\\D\\W\\S", {"1", "a", " ", "-", e}},
      {"(a|b|c|d){0,5}e", {"a", "b", "d", "e"}},
      {"^ab$|^c", {"a", "b", "c"}},
      {"[a-z]{2}[0-9]{1,2}", {"a", "z", "0", "9", "A"}},
      {"(a(b(c(d)?)?)?)+", {"a", "b", "c", "d"}},
      {"\\t\\n?\\r*\\f?\\v?\\0*", {"\t", "\n", "\r", "\f", "\v", std::string(1, '\0')}},
      {"[\\b]\\cA", {"\b", "\x01", "b"}},
      {"(ab|cd)*|ef+", {"a", "b", "c", "d", "e", "f"}},
      {"x{|a}", {"x", "{", "a", "}"}},
      {"(?:(?:a?)*(?:b?)*)+c", {"a", "b", "c"}},
      {"[\\^\\]\\\\]+", {"^", "]", "\\", "a"}},
      {"(()|a){2,3}b", {"a", "b"}},
      // Repetitions of repetitions (some collapse into one loop).
      {"(a+)?b(c{2,})?", {"a", "b", "c"}},
      {"(a{2,}){2}|(b?){2,3}c", {"a", "b", "c"}},
      {"(a+){0,2}b(c*){3}", {"a", "b", "c"}},
      {"[a-c\xf0\x9f\x98\x80-\xf0\x9f\x98\x8a]{2}", {"a", "c", grin, "\xf0\x9f\x98\x8b", euro}},
  };
  return kPatterns;
}

TEST(Regex, AgreesWithPcre2OnFullMatch) {
  std::mt19937 rng(20240611);
  int compared = 0;
  for (const Differential& d : DifferentialPatterns()) {
    SCOPED_TRACE(d.pattern);
    const Grammar g = Compile(d.pattern);
    const Pcre pcre(d.pattern, true);
    int accepted = 0, rejected = 0;
    for (const std::string& s : RandomStrings(d.alphabet, rng, 300, 8)) {
      const bool want = pcre.Match(s);
      EXPECT_EQ(Matches(g, s), want) << "string: \"" << s << "\"";
      (want ? accepted : rejected)++;
      ++compared;
    }
    // Each pattern's alphabet gives both outcomes, so the comparison is not vacuous.
    EXPECT_GT(accepted, 0);
    EXPECT_GT(rejected, 0);
  }
  EXPECT_GT(compared, 10000);
}

TEST(Regex, AgreesWithPcre2OnSearch) {
  std::mt19937 rng(7);
  const std::vector<Differential> patterns = {
      {"ab", {"a", "b", "c"}},
      {"^ab", {"a", "b", "c"}},
      {"ab$", {"a", "b", "c"}},
      {"^a+$", {"a", "b"}},
      {"^a|b$", {"a", "b", "c"}},
      {"a{2}|^c", {"a", "b", "c"}},
      {"x(y|z)*x", {"x", "y", "z", "\xc3\xa9"}},
      {"", {"a"}},
  };
  for (const Differential& d : patterns) {
    SCOPED_TRACE(d.pattern);
    const Grammar g = Compile(d.pattern, true);
    const Pcre pcre(d.pattern, false);
    for (const std::string& s : RandomStrings(d.alphabet, rng, 200, 7)) {
      EXPECT_EQ(Matches(g, s), pcre.Match(s)) << "string: \"" << s << "\"";
    }
  }
}

TEST(Regex, JsonStringBodyAgreesWithPcre2OnTheUnescapedText) {
  // json_string_body matches exactly the JSON.stringify forms of the strings the pattern
  // matches.
  std::mt19937 rng(99);
  const std::vector<std::string> alphabet = {"a",  "\"", "\\", "\n",       "\x01", "\x1f",
                                             "\t", "\b", "/",  "\xc3\xa9", " "};
  for (const char* pattern : {"[^\"]*", "[\\s\\S]*", "a[\\x00-\\x1F]+", "\\\\|\"|\\/", ".{0,3}",
                              "[^a\\s]+", "(a|\\n)*\\t?"}) {
    SCOPED_TRACE(pattern);
    const Grammar g = Compile(pattern, false, true);
    const Pcre pcre(pattern, true);
    for (const std::string& s : RandomStrings(alphabet, rng, 200, 6)) {
      EXPECT_EQ(Matches(g, JsonBody(s)), pcre.Match(s)) << "string: \"" << JsonBody(s) << "\"";
    }
  }
}

}  // namespace
}  // namespace ebb::constrain
