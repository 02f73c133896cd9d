// Tests of constrain/gbnf.h: grammars in the style of llama.cpp's grammars/ folder, checked
// with the reference acceptor Matches(), and every error ParseGbnf reports.
#include "constrain/gbnf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "constrain/grammar.h"
#include "ebb/error.h"

namespace ebb::constrain {
namespace {

// The message ParseGbnf throws for `text` ("" when it does not throw).
std::string ErrorOf(std::string_view text) {
  try {
    ParseGbnf(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  return "";
}

void ExpectLanguage(const Grammar& g, const std::vector<std::string>& accept,
                    const std::vector<std::string>& reject) {
  for (const std::string& s : accept) EXPECT_TRUE(Matches(g, s)) << "should accept: " << s;
  for (const std::string& s : reject) EXPECT_FALSE(Matches(g, s)) << "should reject: " << s;
}

// llama.cpp's grammars/json.gbnf, as it is usually written.
constexpr const char* kJson = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(Gbnf, JsonGrammar) {
  const Grammar g = ParseGbnf(kJson);
  ExpectLanguage(g,
                 {
                     "{}",
                     "{\"a\":1}",
                     "{ \"a\": [1, 2.5, -3e19, true, false, null], \"b\": {\"c\": \"d\"} }",
                     "{\"s\":\"caf\xc3\xa9 \\u00e9 \\n \\\" \\\\ \xf0\x9f\x98\x80\"}",
                     "{\n  \"k\": \"v\"\n}",
                     "{\"n\":0.5E-3}",
                 },
                 {
                     "",
                     "[]",  // root is an object
                     "{\"a\":}",
                     "{\"a\" 1}",
                     "{'a':1}",
                     "{\"a\":1,}",
                     "{\"s\":\"tab\there\"}",  // a raw control character
                     "{\"s\":\"\\x41\"}",      // not a JSON escape
                     "{\"s\":\"\\u12G4\"}",
                     "{\"a\":tru}",
                     "{\"a\":1e10}",  // json.gbnf's exponent is [0-9] [1-9]{0,15}
                     "{\"a\":1} x",
                 });
}

TEST(Gbnf, ArithmeticGrammar) {
  const Grammar g = ParseGbnf(R"gbnf(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)gbnf");
  ExpectLanguage(g, {"1+2=3\n", "x = 4\n(a +b)*c = d_1\n", "(1)=(2)\n"},
                 {"1+2=3", "1+=3\n", "=3\n", "X=1\n", "(1=2\n", "1+2=3\n\nx"});
}

TEST(Gbnf, ListGrammar) {
  const Grammar g = ParseGbnf(R"(root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)");
  ExpectLanguage(g, {"- milk\n", "- eggs\n- caf\xc3\xa9 \xf0\x9f\x98\x80\n"},
                 {"", "- \n", "-milk\n", "- a\rb\n",
                  "- a\xe2\x80\xa8"
                  "b\n",
                  "- a"});
}

TEST(Gbnf, UnicodeClassGrammar) {
  // In the spirit of llama.cpp's japanese.gbnf: classes of multi-byte characters.
  const Grammar g = ParseGbnf(R"(root        ::= (jp-char | space)+
jp-char     ::= hiragana | katakana | punctuation | cjk
hiragana    ::= [ぁ-ゟ]
katakana    ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk         ::= [一-鿿]
space       ::= [ \t\n]
)");
  ExpectLanguage(g, {"こんにちは", "カタカナ 漢字。", "\xe3\x81\x81"},
                 {"", "abc", "こんにちはa", "\xe3\x81", "\xf0\x9f\x98\x80"});
}

TEST(Gbnf, Syntax) {
  struct Case {
    const char* grammar;
    std::vector<std::string> accept;
    std::vector<std::string> reject;
  };
  for (const Case& c : std::vector<Case>{
           // Rules in any order; comments anywhere a blank may be.
           {"root ::= a b # trailing comment\n# a comment line\nb ::= \"y\"\na ::= \"x\"",
            {"xy"},
            {"x", "yx"}},
           // String escapes: \x \u \U are code points, written as UTF-8.
           {R"(root ::= "\x41\u00e9\U0001F600\t\r\n\\\"\[\]")",
            {"A\xc3\xa9\xf0\x9f\x98\x80\t\r\n\\\"[]"},
            {"A\xe9"}},
           // Raw UTF-8 in strings and classes.
           {"root ::= \"\xc3\xa9\" [\xce\xb1-\xcf\x89]",
            {"\xc3\xa9\xce\xb2"},
            {"\xc3\xa9"
             "a"}},
           // Classes: ranges, a leading or trailing '-', escapes, negation (a 4-byte character
           // is not 'a').
           {"root ::= [a-c-] [^a] [\\x30-\\x39\\]]",
            {"a\xf0\x9f\x98\x80"
             "0",
             "-b]", "cz9"},
            {"da0", "aa0", "a\n"}},
           // '.' is any character, newline included.
           {"root ::= . .", {"ab", "\n\xf0\x9f\x98\x80"}, {"a", "abc", "\xff\xff"}},
           // Quantifiers on strings, classes, groups and rules.
           {"root ::= \"ab\"* [0-9]+ (\"x\" | \"y\")? z{2} z{1,} w{0,2} \nz ::= \"z\"\nw ::= "
            "\"w\"",
            {"0zzz", "abab12xzzzzww"},
            {"a0zzz", "0zz", "0zzzwww"}},
           {"root ::= \"a\"{3}", {"aaa"}, {"aa", "aaaa"}},
           {"root ::= \"a\"{ 2 , 3 }", {"aa", "aaa"}, {"a", "aaaa"}},
           {"root ::= \"a\"{0}", {""}, {"a"}},
           {"root ::= (\"a\"{2}){3}", {"aaaaaa"}, {"aaaaa"}},
           // Empty strings and alternatives.
           {"root ::= \"\" | \"a\" \"\"*", {"", "a"}, {"aa"}},
           {"root ::= \"a\" ( | \"b\")", {"a", "ab"}, {"b"}},
           // A group spans lines; a line starting with '|' continues the rule.
           {"root ::= (\n  \"a\"\n  | \"b\"\n)\n  | \"c\"\n\n  | \"d\"\nx ::= \"e\"",
            {"a", "b", "c", "d"},
            {"e"}},
           // CRLF line endings.
           {"root ::= a\r\na ::= \"x\"\r\n", {"x"}, {"x\r"}},
           // Right recursion is fine.
           {"root ::= \"(\" root \")\" | \"\"", {"", "()", "((()))"}, {"(()", ")("}},
       }) {
    SCOPED_TRACE(c.grammar);
    const Grammar g = ParseGbnf(c.grammar);
    ExpectLanguage(g, c.accept, c.reject);
  }
}

TEST(Gbnf, ErrorsCarryLineAndColumn) {
  struct Bad {
    const char* grammar;
    const char* expect;
  };
  for (const Bad& b : std::vector<Bad>{
           {"root ::= a\n", "grammar: line 1, column 10: undefined rule 'a'"},
           {"root ::= x y\nx ::= \"1\"\n", "grammar: line 1, column 12: undefined rule 'y'"},
           {"root ::= \"a\"\nroot ::= \"b\"",
            "grammar: line 2, column 1: rule 'root' is defined twice (first on line 1)"},
           {"root ::= \"abc", "grammar: line 1, column 10: the string is not closed with '\"'"},
           {"root ::= [abc", "grammar: line 1, column 10: the character class is not closed"},
           {"root ::= (\"a\"",
            "grammar: line 1, column 14: expected ')' to close the '(' on line 1"},
           {"root ::= \"a\")",
            "grammar: line 1, column 13: expected the end of the rule, found an "
            "unmatched ')'"},
           {"root = \"a\"", "grammar: line 1, column 6: expected '::=' after the rule name 'root'"},
           {"root ::= x ::= \"a\"",
            "grammar: line 1, column 12: expected the end of the rule, "
            "found '::=' (each rule starts on a line of its own)"},
           {"::= \"a\"", "grammar: line 1, column 1: expected a rule name, found '::='"},
           {"root ::= \"a\"\n  \"b\"",
            "grammar: line 2, column 3: expected a rule name, found '\"'"},
           {"root ::= \"\\q\"", "grammar: line 1, column 11: unknown escape '\\q'"},
           {"root ::= \"\\x4\"", "grammar: line 1, column 11: '\\x' needs 2 hex digits"},
           {"root ::= \"\\uD800\"",
            "grammar: line 1, column 11: the escape \\uD800 is not a "
            "Unicode character"},
           {"root ::= \"\\U00110000\"", "grammar: line 1, column 11: the escape \\U00110000"},
           {"root ::= [z-a]", "grammar: line 1, column 11: the range in the class is out of order"},
           {"root ::= []", "grammar: line 1, column 10: the empty class [] is not supported"},
           {"root ::= [^]", "grammar: line 1, column 10: the empty class [^] is not supported"},
           {"root ::= [^\\x00-\\U0010FFFF]",
            "grammar: line 1, column 10: the character class matches no character"},
           {"root ::= * \"a\"", "grammar: line 1, column 10: '*' has nothing to repeat"},
           {"root ::= (| +)", "grammar: line 1, column 13: '+' has nothing to repeat"},
           {"root ::= \"a\"{}", "grammar: line 1, column 14: expected a number after '{'"},
           {"root ::= \"a\"{2", "grammar: line 1, column 15: expected '}' to end the repetition"},
           {"root ::= \"a\"{3,2}",
            "grammar: line 1, column 13: the repetition {3,2} has its "
            "maximum below its minimum"},
           {"root ::= \"a\"{10001}",
            "grammar: line 1, column 13: the repetition count 10001 is above the limit of 10000"},
           {"root ::= (\"a\"{1000}){1000}",
            "grammar: line 1, column 21: nested repetitions multiply to 1000000 copies"},
           {"root ::= <think>", "grammar: line 1, column 10: token references"},
           {"root ::= my_rule\n",
            "grammar: line 1, column 12: expected the end of the rule, "
            "found '_' (rule names use letters, digits and '-')"},
           {"root ::= \"a\"\n\xc3(", "grammar: line 2, column 1: expected a rule name"},
           {"root ::= \"\xc3(\"", "grammar: line 1, column 11: invalid UTF-8"},
           {"root ::= \"\xce\xb1\" @",
            "grammar: line 1, column 14: expected the end of the rule, "
            "found '@'"},
           {"root ::= x*\nx ::= \"a\"?",
            "grammar: line 1, column 11: the item before '*' can "
            "match the empty string"},
           {"root ::= (\"a\"?)+", "grammar: line 1, column 16: the item before '+' can match"},
       }) {
    const std::string message = ErrorOf(b.grammar);
    EXPECT_EQ(message.rfind(b.expect, 0), 0u) << b.grammar << "\n -> " << message;
  }
}

TEST(Gbnf, MissingRootAndValidation) {
  EXPECT_EQ(ErrorOf("start ::= \"a\""),
            "grammar: no rule named 'root': add `root ::= ...`, the rule the whole text must "
            "match");
  EXPECT_EQ(ErrorOf("").rfind("grammar: no rule named 'root'", 0), 0u);
  EXPECT_EQ(ErrorOf("# only a comment\n\n").rfind("grammar: no rule named 'root'", 0), 0u);
  // Grammar::Validate's checks name the rule.
  const std::string left = ErrorOf("root ::= root \"a\" | \"b\"");
  EXPECT_NE(left.find("'root' is left-recursive"), std::string::npos) << left;
  const std::string endless = ErrorOf("root ::= \"a\" root");
  EXPECT_NE(endless.find("'root' never ends"), std::string::npos) << endless;
  // An unused, undefined-free extra rule is fine.
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nunused ::= \"b\""), "");
}

TEST(Gbnf, BlowUpGuards) {
  // Deep nesting is refused, not recursed into.
  const std::string deep =
      "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
  EXPECT_EQ(ErrorOf(deep).rfind("grammar: line 1, column 266: parentheses nested deeper than 256 "
                                "levels are not supported",
                                0),
            0u)
      << ErrorOf(deep).substr(0, 200);
  const std::string ok = "root ::= " + std::string(256, '(') + "\"a\"" + std::string(256, ')');
  EXPECT_TRUE(Matches(ParseGbnf(ok), "a"));
  // The total expansion of counted repetitions is bounded.
  std::string many = "root ::=";
  for (int i = 0; i < 101; ++i) many += " \"a\"{10000}";
  EXPECT_NE(ErrorOf(many).find("the repetitions of the grammar add up to more than 1000000"),
            std::string::npos);
  // Grammar's rule limit comes back with a place.
  std::string groups = "root ::=";
  for (int i = 0; i < Grammar::kMaxRules; ++i) groups += " (\"a\"|\"b\")";
  const std::string message = ErrorOf(groups);
  EXPECT_EQ(message.rfind("grammar: line 1, column ", 0), 0u) << message;
  EXPECT_NE(message.find("the grammar needs more than 200000 rules"), std::string::npos);
}

}  // namespace
}  // namespace ebb::constrain
