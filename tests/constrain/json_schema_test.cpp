// Tests of constrain/json_schema.h: the language of CompileJsonSchema's grammar (checked with
// the reference acceptor Matches() on canonical texts), and every error it reports, each naming
// the keyword and the JSON pointer of the schema holding it.
#include "constrain/json_schema.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "constrain/grammar.h"
#include "ebb/error.h"

namespace ebb::constrain {
namespace {

// The message CompileJsonSchema throws for `schema` ("" when it compiles).
std::string ErrorOf(const std::string& schema, const JsonSchemaOptions& options = {}) {
  try {
    CompileJsonSchema(schema, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  return "";
}

struct Case {
  std::string schema;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

void ExpectCases(const std::vector<Case>& cases, const JsonSchemaOptions& options = {}) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schema);
    Grammar g;
    try {
      g = CompileJsonSchema(c.schema, options);
    } catch (const Error& e) {
      ADD_FAILURE() << "does not compile: " << e.what();
      continue;
    }
    for (const std::string& s : c.accept) EXPECT_TRUE(Matches(g, s)) << "should accept: " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(Matches(g, s)) << "should reject: " << s;
  }
}

// The error names the keyword and the place, and says what is wrong.
void ExpectError(const std::string& schema, const std::vector<std::string>& parts) {
  SCOPED_TRACE(schema);
  const std::string message = ErrorOf(schema);
  ASSERT_FALSE(message.empty()) << "compiled, but should not";
  EXPECT_EQ(message.rfind("json_schema: ", 0), 0u) << message;
  for (const std::string& p : parts) {
    EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
  }
}

// ----- types and scalars

TEST(JsonSchema, Types) {
  ExpectCases({
      {R"({"type":"null"})", {"null"}, {"0", "false", "\"null\"", "nul", "null "}},
      {R"({"type":"boolean"})", {"true", "false"}, {"0", "null", "True"}},
      {R"({"type":"integer"})",
       {"0", "7", "-7", "1234567890123456789012345"},
       {"-0", "01", "1.0", "1e3", "+1", "", "-", "\"1\""}},
      {R"({"type":"number"})",
       {"0", "-0", "1.5", "-0.25", "1e5", "1E+5", "2.5e-3", "12"},
       {"01", "1.", ".5", "+1", "1e", "--1", "0x10", "NaN", "Infinity"}},
      {R"({"type":"string"})",
       {R"("")", R"("abc")", R"("a\"b")", R"("a\\b")", R"("\n\t\b\f\r")", R"("\u0001\u001f")",
        "\"caf\xC3\xA9\"", "\"\xF0\x9F\x98\x80\"", "\"/\"", "\"\x7F\""},
       // Only JSON.stringify's escapes: no \/, no \u for printable characters, no upper-case
       // hex, no raw control characters, no broken UTF-8.
       {R"("\/")", R"("\u0041")", R"("\u001F")", R"("\u000a")", "\"a\nb\"", "\"\xC3\"",
        "\"\xED\xA0\x80\"", "\"\xC0\xAF\"", R"("abc)", R"(abc")", "1"}},
      {R"({"type":["integer","string"]})", {"1", "\"x\""}, {"1.5", "null", "[]"}},
      {R"({"type":["integer","number"]})", {"1", "1.5"}, {"\"1\""}},
      {R"({"type":"array"})", {"[]", "[1,\"a\",null,[{}]]"}, {"[1,]", "[ 1]", "{}"}},
      {R"({"type":"object"})", {"{}", R"({"a":1,"b":[true]})"}, {"{\"a\":1,}", "{ }", "[]"}},
  });
}

TEST(JsonSchema, BooleanAndEmptySchemas) {
  ExpectCases({
      {"true", {"null", "1", "\"x\"", "[]", "{\"a\":{\"b\":[1]}}"}, {"", "nul", "{a:1}"}},
      {"{}", {"null", "1.5", "[[]]"}, {"[1,]"}},
      {R"({"title":"t","description":"d","default":1,"examples":[1],"$comment":"c",
          "readOnly":true,"writeOnly":false,"deprecated":false,
          "$schema":"http://json-schema.org/draft-07/schema#","$id":"http://example.com/s"})",
       {"null", "{}"},
       {}},
      {R"({"properties":{"a":false}})", {"{}", "{\"b\":1}"}, {"{\"a\":1}"}},
      {R"({"items":false})", {"[]", "1"}, {"[1]"}},
  });
  ExpectError("false", {"accepts no JSON value"});
}

// Keywords apply only to their own type when `type` is absent.
TEST(JsonSchema, KeywordsApplyToTheirOwnType) {
  ExpectCases({
      {R"({"minLength":2})", {"5", "\"ab\"", "null", "[]", "{}"}, {"\"a\""}},
      {R"({"maximum":3,"type":["integer","string"]})", {"3", "\"abcd\""}, {"4"}},
      {R"({"properties":{"a":{"type":"integer"}}})", {"\"x\"", "{\"a\":1}"}, {"{\"a\":\"x\"}"}},
      {R"({"maxItems":1})", {"[1]", "\"xyz\""}, {"[1,2]"}},
      {R"({"type":"string","minimum":5,"maxItems":0})", {"\"x\""}, {"5"}},
  });
}

// ----- strings

TEST(JsonSchema, StringLengthCountsCodePoints) {
  ExpectCases({
      {R"({"type":"string","minLength":2,"maxLength":3})",
       {R"("ab")", R"("abc")", "\"\xC3\xA9\xC3\xA9\"", R"("\n\"")", R"("\u0001a")"},
       {R"("a")", R"("abcd")", "\"\xC3\xA9\"", R"("\n")"}},
      {R"({"type":"string","maxLength":0})", {R"("")"}, {R"("a")"}},
      {R"({"type":"string","minLength":3})", {R"("abc")", R"("abcdefgh")"}, {R"("ab")"}},
  });
  ExpectError(R"({"type":"string","minLength":3,"maxLength":2})", {"accepts no JSON value"});
}

TEST(JsonSchema, Pattern) {
  ExpectCases({
      // A search, as JSON Schema's pattern is: unanchored sides may have anything around.
      {R"({"type":"string","pattern":"a+"})", {R"("a")", R"("xaay")"}, {R"("")", R"("xyz")"}},
      {R"({"type":"string","pattern":"^[a-z]{2,3}$"})",
       {R"("ab")", R"("abc")"},
       {R"("a")", R"("abcd")", R"("aB")"}},
      // The pattern sees characters; the grammar writes them escaped.
      {R"({"type":"string","pattern":"^a\"b$"})", {R"("a\"b")"}, {"\"a\"b\""}},
      {R"({"pattern":"^x"})", {"1", R"("xy")"}, {R"("yx")"}},
  });
}

TEST(JsonSchema, Formats) {
  ExpectCases({
      {R"({"type":"string","format":"date"})",
       {R"("1963-06-19")", R"("2000-02-29")", R"("2024-02-29")", R"("1999-12-31")",
        R"("0000-02-29")", R"("2023-04-30")"},
       {R"("1900-02-29")", R"("2023-02-29")", R"("2023-04-31")", R"("2023-13-01")",
        R"("2023-00-10")", R"("2023-01-00")", R"("06/19/1963")", R"("2013-350")", R"("2023-1-01")",
        R"("12023-01-01")"}},
      {R"({"type":"string","format":"time"})",
       {R"("08:30:06.283185Z")", R"("08:30:06z")", R"("23:59:59+23:59")", R"("00:00:00-00:00")",
        R"("23:59:60Z")", R"("15:59:60-08:00")", R"("00:29:60+00:30")", R"("23:59:60.5+00:00")"},
       {R"("08:30:06 PST")", R"("01:01:01,1111")", R"("08:30:06")", R"("24:00:00Z")",
        R"("12:60:00Z")", R"("12:00:61Z")", R"("22:59:60Z")", R"("23:59:60+01:00")",
        R"("12:00:00+24:00")", R"("12:00:00.Z")", R"("8:30:06Z")"}},
      {R"({"type":"string","format":"date-time"})",
       {R"("1963-06-19T08:30:06.283185Z")", R"("1963-06-19t08:30:06z")",
        R"("1990-12-31T15:59:50.123-08:00")", R"("1998-12-31T23:59:60Z")"},
       {R"("1990-02-31T15:59:60.123-08:00")", R"("1990-12-31T15:59:60-24:00")",
        R"("1963-06-19 08:30:06Z")", R"("1963-06-19")"}},
      {R"({"type":"string","format":"uuid"})",
       {R"("2eb8aa08-aa98-11ea-b4aa-73b441d16380")", R"("2EB8AA08-AA98-11EA-B4AA-73B441D16380")"},
       {R"("2eb8aa08-aa98-11ea-b4aa-73b441d1638")", R"("2eb8aa08aa9811eab4aa73b441d16380")",
        R"("2eb8aa08-aa98-11ea-b4aa-73b441d1638g")"}},
      {R"({"type":"string","format":"email"})",
       {R"("joe.bloggs@example.com")", R"("te~st@example.com")", R"("\"joe bloggs\"@example.com")",
        R"("\"a\\\"b\"@example.com")", R"("joe@[127.0.0.1]")", R"("joe@[IPv6:::1]")",
        R"("a@localhost")"},
       {R"("2962")", R"(".test@example.com")", R"("test.@example.com")", R"("te..st@example.com")",
        R"("joe@-example.com")", R"("joe@example-.com")", R"("joe@exa_mple.com")",
        R"("joe@[127.0.0.300]")", R"("@example.com")", R"("joe@")"}},
      {R"({"type":"string","format":"ipv4"})",
       {R"("192.168.0.1")", R"("0.0.0.0")"},
       {R"("127.0.0.0.1")", R"("256.256.256.256")", R"("127.0")", R"("0x7f000001")",
        R"("087.10.0.1")"}},
      {R"({"type":"string","format":"ipv6"})",
       {R"("::1")", R"("::")", R"("1:2:3:4:5:6:7:8")", R"("fe80::1:2")", R"("::ffff:192.168.0.1")",
        R"("1::")"},
       {R"("12345::")", R"("1:1:1:1:1:1:1:1:1")", R"("::laptop")", R"("1:::2")", R"(":1")",
        R"("1::2::3")"}},
      // A format constrains strings only; fixed-length formats allow a consistent length.
      {R"({"format":"date"})", {"1", "null", R"("2020-01-01")"}, {R"("x")"}},
      {R"({"type":"string","format":"uuid","minLength":36,"maxLength":36})",
       {R"("2eb8aa08-aa98-11ea-b4aa-73b441d16380")"},
       {}},
  });
  ExpectError(R"({"type":"string","format":"date","maxLength":9})", {"accepts no JSON value"});
}

// ----- integers

TEST(JsonSchema, IntegerRanges) {
  ExpectCases({
      {R"({"type":"integer","minimum":-15,"maximum":123})",
       {"-15", "-9", "-1", "0", "9", "10", "99", "100", "123"},
       {"-16", "-100", "124", "200", "1000", "-0", "05"}},
      {R"({"type":"integer","exclusiveMinimum":0})",
       {"1", "9", "10", "123456789012345678901"},
       {"0", "-1", "-123"}},
      {R"({"type":"integer","exclusiveMaximum":0})", {"-1", "-123456789012345678901"}, {"0", "1"}},
      {R"({"type":"integer","minimum":10,"maximum":10})", {"10"}, {"9", "11", "100", "1"}},
      {R"({"type":"integer","minimum":-1000,"maximum":-999})",
       {"-1000", "-999"},
       {"-998", "-1001", "999", "0"}},
      {R"({"type":"integer","minimum":7,"maximum":1234})",
       {"7", "8", "9", "10", "99", "100", "999", "1000", "1199", "1229", "1234"},
       {"6", "0", "1235", "1240", "1300", "2000", "9999", "12340"}},
      // Bounds given as non-integers round inwards.
      {R"({"type":"integer","minimum":1.5,"maximum":4.5})", {"2", "3", "4"}, {"1", "5"}},
      {R"({"type":"integer","exclusiveMinimum":1.5,"exclusiveMaximum":4.0})",
       {"2", "3"},
       {"1", "4"}},
      {R"({"type":"integer","minimum":-2.5,"maximum":-0.5})", {"-2", "-1"}, {"-3", "0"}},
      {R"({"type":"integer","maximum":3.0,"exclusiveMaximum":3})", {"2", "-5"}, {"3"}},
      // int64 and beyond.
      {R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})",
       {"-9223372036854775808", "9223372036854775807", "0", "-1"},
       {"-9223372036854775809", "9223372036854775808", "10000000000000000000"}},
      {R"({"type":"integer","minimum":18446744073709551615})",
       {"18446744073709551615", "18446744073709551616", "100000000000000000000"},
       {"18446744073709551614", "0"}},
      {R"({"type":"integer","maximum":1e20})",
       {"100000000000000000000", "-5"},
       {"100000000000000000001"}},
      {R"({"type":"integer","minimum":-1e30})",
       {"-1000000000000000019884624838656", "7"},
       {"-1000000000000000019884624838657"}},
  });
  ExpectError(R"({"type":"integer","minimum":5,"maximum":4})", {"accepts no JSON value"});
  ExpectError(R"({"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5})",
              {"accepts no JSON value"});
}

// Exhaustive over a small window: the range grammar agrees with arithmetic.
TEST(JsonSchema, IntegerRangesExhaustive) {
  const std::vector<std::pair<int, int>> ranges{{-120, -3}, {-7, 7},   {0, 0},     {1, 1},
                                                {9, 10},    {19, 201}, {-99, 100}, {-100, -100}};
  for (const auto& [lo, hi] : ranges) {
    const std::string schema = R"({"type":"integer","minimum":)" + std::to_string(lo) +
                               R"(,"maximum":)" + std::to_string(hi) + "}";
    SCOPED_TRACE(schema);
    const Grammar g = CompileJsonSchema(schema);
    for (int v = -300; v <= 300; ++v) {
      EXPECT_EQ(Matches(g, std::to_string(v)), v >= lo && v <= hi) << v;
    }
  }
}

TEST(JsonSchema, NumberRanges) {
  ExpectCases({
      {R"({"type":"number","minimum":0,"maximum":1})",
       {"0", "1", "0.5", "1.0", "0.000001", "1e-7", "9.5e-10", "0.999", "0.0"},
       {"1.01", "-0.5", "-1e-7", "2", "1e0", "-0", "1.", ".5"}},
      {R"({"exclusiveMinimum":1.1})",
       {"1.1000001", "1.2", "2", "1000", "\"x\""},
       {"1.1", "1.10", "1", "0.5", "-3", "1e-7"}},
      {R"({"type":"number","exclusiveMaximum":-2.5,"minimum":-10})",
       {"-2.51", "-10", "-10.0", "-9.99", "-3"},
       {"-2.5", "-10.01", "0", "-1e-7", "-11"}},
      {R"({"type":"number","minimum":-1,"exclusiveMaximum":0})",
       {"-1", "-0.5", "-1e-7"},
       {"0", "-0", "0.0", "1e-7", "-1.5"}},
      {R"({"type":"number","minimum":2.5,"maximum":2.5})", {"2.5", "2.50"}, {"2.4", "2.51", "25"}},
      {R"({"type":"number","maximum":1e21})",
       {"1000000000000000000000", "-1e-9", "5.25"},
       {"1000000000000000000000.5", "1000000000000000000001"}},
  });
  ExpectError(R"({"type":"number","minimum":1.5,"exclusiveMaximum":1.5})",
              {"accepts no JSON value"});
}

// Random bounds against random numbers: the grammar agrees with arithmetic (a few digits, so
// that doubles compare these decimals exactly).
TEST(JsonSchema, NumberRangesRandomized) {
  std::mt19937 rng(7);
  const auto decimal = [&](int max_frac) {
    std::string s = (rng() % 2) ? "-" : "";
    s += std::to_string(rng() % (rng() % 2 ? 10 : 1000));
    const int frac = static_cast<int>(rng() % static_cast<unsigned>(max_frac + 1));
    if (frac) {
      s += ".";
      for (int i = 0; i < frac; ++i) s += static_cast<char>('0' + rng() % 10);
    }
    return s;
  };
  for (int round = 0; round < 60; ++round) {
    const char* kinds[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    std::string schema = R"({"type":"number")";
    std::vector<std::pair<int, double>> bounds;
    for (int k = 0; k < 4; ++k) {
      if (rng() % 2) continue;
      const std::string b = decimal(3);
      schema += std::string(",\"") + kinds[k] + "\":" + b;
      bounds.emplace_back(k, std::stod(b));
    }
    schema += "}";
    if (bounds.empty()) continue;
    SCOPED_TRACE(schema);
    Grammar g;
    try {
      g = CompileJsonSchema(schema);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("accepts no JSON value"), std::string::npos) << e.what();
      continue;
    }
    for (int i = 0; i < 200; ++i) {
      const std::string x = decimal(4);
      const double v = std::stod(x);
      bool in = !(x[0] == '-' && v == 0);  // "-0" and "-0.00" are not canonical
      for (const auto& [k, b] : bounds) {
        in = in && (k == 0 ? v >= b : k == 1 ? v > b : k == 2 ? v <= b : v < b);
      }
      EXPECT_EQ(Matches(g, x), in) << x;
    }
  }
}

// ----- enum and const

TEST(JsonSchema, EnumAndConst) {
  ExpectCases({
      {R"({"enum":[1,"a",null,true,{"x":1},[1,2]]})",
       {"1", "\"a\"", "null", "true", R"({"x":1})", "[1,2]"},
       {"2", "\"b\"", "false", R"({"x":2})", "[2,1]", "1.0", "[1, 2]"}},
      // Numbers compare by value and are written canonically.
      {R"({"enum":[1.0, 2.5, -0.0, 1e-7]})", {"1", "2.5", "0", "1e-7"}, {"1.0", "-0", "0.0000001"}},
      {R"({"const":1})", {"1"}, {"1.0", "2"}},
      {R"({"const":"a\"\u0001\u00e9"})", {"\"a\\\"\\u0001\xC3\xA9\""}, {"\"a\\\"\\u0001\\u00e9\""}},
      // The rest of the schema filters the values.
      {R"({"type":"string","enum":["a",1,"bb"],"maxLength":1})", {"\"a\""}, {"1", "\"bb\""}},
      {R"({"enum":[1,2,3],"const":2})", {"2"}, {"1", "3"}},
      {R"({"enum":[1.5,2.5,3.5],"minimum":2})", {"2.5", "3.5"}, {"1.5"}},
      {R"({"enum":["2020-01-01","x"],"format":"date"})", {"\"2020-01-01\""}, {"\"x\""}},
      {R"({"enum":["ab","b"],"pattern":"^a"})", {"\"ab\""}, {"\"b\""}},
      // Objects follow `properties` order, then their own.
      {R"({"properties":{"b":{},"a":{}},"const":{"a":1,"c":3,"b":2}})",
       {R"({"b":2,"a":1,"c":3})"},
       {R"({"a":1,"c":3,"b":2})"}},
      {R"({"enum":[{"a":{"x":1}}],"properties":{"a":{"properties":{"y":{},"x":{}}}}})",
       {R"({"a":{"x":1}})"},
       {}},
  });
  ExpectError(R"({"type":"string","enum":[1,2]})", {"accepts no JSON value"});
  ExpectError(R"({"enum":[]})", {"accepts no JSON value"});
}

// ----- objects

TEST(JsonSchema, Objects) {
  ExpectCases({
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
          "required":["b"]})",
       {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":null})",
        R"({"b":"x","c":[1],"d":{}})"},
       // Listed properties come in `properties` order, first; extras never repeat them.
       {"{}", R"({"a":1})", R"({"b":"x","a":1})", R"({"a":"1","b":"x"})", R"({"b":"x","a":2})",
        R"({"b":"x","b":"y"})", R"({"a":1,"b":"x",})"}},
      {R"({"type":"object","properties":{"a":{}},"additionalProperties":false})",
       {"{}", R"({"a":[1]})"},
       {R"({"b":1})", R"({"a":1,"b":1})"}},
      {R"({"type":"object","properties":{"ab":{}},"additionalProperties":{"type":"integer"}})",
       {R"({"ab":"x","a":1})", R"({"abc":1})", R"({"b":2,"c":3})", R"({"":1})"},
       {R"({"a":"x"})", R"({"ab":1,"ab":2})", R"({"ab":1,"a":"x"})"}},
      // Keys are compared as strings: an escaped spelling of a listed name is that name.
      {R"({"type":"object","properties":{"a\"b":{"type":"integer"},"\u00e9":{"type":"integer"}},
          "additionalProperties":{"type":"string"}})",
       {R"({"a\"b":1})", "{\"\xC3\xA9\":1}", R"({"a\"c":"x"})", R"({"\n":"x"})"},
       {R"({"a\"b":"x"})", "{\"\xC3\xA9\":\"x\"}", "{\"a\\\"b\":1,\"a\\\"b\":\"x\"}"}},
      // A required name that `properties` does not list is valued by additionalProperties.
      {R"({"type":"object","required":["x"],"additionalProperties":{"type":"boolean"}})",
       {R"({"x":true})", R"({"x":false,"y":true})"},
       {"{}", R"({"x":1})", R"({"y":true})"}},
      {R"({"type":"object","properties":{"a":{}},"required":["a","a"]})", {R"({"a":1})"}, {"{}"}},
  });
  ExpectError(R"({"type":"object","required":["x"],"additionalProperties":false})",
              {"accepts no JSON value"});
  ExpectError(R"({"type":"object","properties":{"x":false},"required":["x"]})",
              {"accepts no JSON value"});
}

// ----- arrays

TEST(JsonSchema, Arrays) {
  ExpectCases({
      {R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
       {"[1]", "[1,2]", "[1,2,3]"},
       {"[]", "[1,2,3,4]", "[1,\"a\"]", "[1,]"}},
      {R"({"type":"array","items":{"type":"integer"},"minItems":2})",
       {"[1,2]", "[1,2,3,4,5]"},
       {"[1]"}},
      {R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"}},
      {R"({"type":"array","items":[{"type":"integer"},{"type":"string"}]})",
       {"[]", "[1]", "[1,\"a\"]", "[1,\"a\",null,{}]"},
       {"[\"a\"]", "[1,2]"}},
      {R"({"type":"array","items":[{"type":"integer"},{"type":"string"}],
          "additionalItems":false,"minItems":1})",
       {"[1]", "[1,\"a\"]"},
       {"[]", "[1,\"a\",null]"}},
      {R"({"type":"array","items":[{},{}],"additionalItems":{"type":"boolean"},"maxItems":3})",
       {"[1,2,true]", "[1]"},
       {"[1,2,3]", "[1,2,true,false]"}},
      {R"({"type":"array","items":[{}, false]})", {"[]", "[1]"}, {"[1,2]"}},
      // additionalItems without an items array is ignored (draft 7).
      {R"({"type":"array","additionalItems":false})", {"[1,2]"}, {}},
  });
}

// ----- combinations

TEST(JsonSchema, AnyOfAndAllOf) {
  ExpectCases({
      {R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})",
       {"1", "\"a\""},
       {"\"ab\"", "1.5"}},
      // Sibling keywords apply to every branch.
      {R"({"type":"string","anyOf":[{"maxLength":2},{"minLength":4}]})",
       {R"("")", R"("ab")", R"("abcd")"},
       {R"("abc")", "1"}},
      {R"({"type":"object","properties":{"a":{},"b":{}},"additionalProperties":false,
          "anyOf":[{"required":["a"]},{"required":["b"]}]})",
       {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"},
       {"{}", R"({"c":1})"}},
      {R"({"allOf":[{"properties":{"bar":{"type":"integer"}},"required":["bar"]},
                    {"properties":{"foo":{"type":"string"}},"required":["foo"]}]})",
       {R"({"bar":2,"foo":"x"})", "1"},
       {R"({"bar":2})", R"({"foo":"x"})", R"({"bar":"2","foo":"x"})"}},
      // A name one side lists must satisfy the other side's additionalProperties.
      {R"({"allOf":[{"type":"object","properties":{"a":{}},"additionalProperties":false},
                    {"properties":{"b":{"type":"integer"}}}]})",
       {"{}", R"({"a":1})"},
       {R"({"b":1})", R"({"a":1,"b":1})"}},
      {R"({"allOf":[{"type":["integer","string"]},{"type":["number","null"]},{"minimum":3}]})",
       {"3", "100"},
       {"2", "\"x\"", "null", "3.5"}},
      {R"({"allOf":[{"type":"array","items":[{"type":"integer"}]},
                    {"items":{"minimum":2}},{"maxItems":2}]})",
       {"[2]", "[2,5]", "[]"},
       {"[1]", "[2,1]", "[2,3,4]", "[\"x\"]"}},
      {R"({"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},
                    {"anyOf":[{"type":"string"},{"type":"null"}]}]})",
       {"\"x\""},
       {"1", "null"}},
      {R"({"allOf":[true,{"type":"null"}]})", {"null"}, {"1"}},
      {R"({"anyOf":[false,{"type":"null"}]})", {"null"}, {"1"}},
  });
  ExpectError(R"({"allOf":[{"type":"integer"},{"type":"string"}]})", {"accepts no JSON value"});
  ExpectError(R"({"allOf":[{"const":1},{"const":2}]})", {"accepts no JSON value"});
}

// oneOf is anyOf when no value can match two branches.
TEST(JsonSchema, DisjointOneOf) {
  ExpectCases({
      {R"({"oneOf":[{"type":"string"},{"type":"integer"},{"enum":[null,true]}]})",
       {"\"a\"", "1", "null", "true"},
       {"1.5", "false", "[]"}},
      // A tagged union: a required property with different constants.
      {R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
                     "required":["kind"],"additionalProperties":false},
                    {"$ref":"#/definitions/b"}],
          "definitions":{"b":{"type":"object","properties":{"kind":{"enum":["b","c"]},
                              "y":{"type":"string"}},"required":["kind","y"]}}})",
       {R"({"kind":"a"})", R"({"kind":"a","x":1})", R"({"kind":"b","y":"z"})",
        R"({"kind":"c","y":""})"},
       {R"({"kind":"a","y":"z"})", R"({"kind":"b"})", R"({"kind":"d","y":"z"})", "{}"}},
      // Sibling keywords apply to every branch.
      {R"({"type":["string","integer","null"],"oneOf":[{"type":"string","maxLength":1},
                                                       {"type":"integer"}]})",
       {"\"a\"", "7"},
       {"\"ab\"", "null"}},
      {R"({"oneOf":[true,false,false]})", {"1", "null"}, {}},
      {R"({"enum":[1,"a",null],"oneOf":[{"type":"integer"},{"type":"string"}]})",
       {"1", "\"a\""},
       {"null"}},
      {R"({"allOf":[{"oneOf":[{"type":"integer"},{"type":"string"}]},
                    {"anyOf":[{"type":"string"},{"type":"null"}]}]})",
       {"\"x\""},
       {"1", "null"}},
  });
  ExpectError(R"({"oneOf":[{"type":"integer"},{"minimum":2}]})",
              {"keyword 'oneOf' at / is not supported", "branches 0 and 1 may both match"});
  ExpectError(R"({"properties":{"p":{"oneOf":[{"type":"object","required":["k"],
                   "properties":{"k":{"enum":[1,2]}}},
                   {"type":"object","required":["k"],"properties":{"k":{"const":2.0}}}]}}})",
              {"keyword 'oneOf' at /properties/p is not supported", "use anyOf"});
  ExpectError(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})", {"branches 0 and 1"});
  ExpectError(R"({"oneOf":{}})", {"keyword 'oneOf' at /", "non-empty array"});
}

// ----- references

TEST(JsonSchema, References) {
  ExpectCases({
      {R"({"definitions":{"a":{"type":"integer"}},"properties":{"x":{"$ref":"#/definitions/a"}},
          "type":"object"})",
       {R"({"x":1})"},
       {R"({"x":"1"})"}},
      {R"({"$defs":{"a":{"type":"integer"}},"$ref":"#/$defs/a"})", {"1"}, {"\"a\""}},
      // $ref's siblings are ignored in draft 7.
      {R"({"definitions":{"a":{"type":"array"}},"$ref":"#/definitions/a","maxItems":1})",
       {"[1,2,3]"},
       {"1"}},
      // ... and apply from 2019-09 on.
      {R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
          "$defs":{"a":{"type":"array"}},"$ref":"#/$defs/a","maxItems":1})",
       {"[1]"},
       {"[1,2]", "1"}},
      // Recursion: a linked list and a tree.
      {R"({"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},
          "required":["v"],"additionalProperties":false})",
       {R"({"v":1})", R"({"v":1,"next":{"v":2,"next":{"v":3}}})"},
       {R"({"v":1,"next":{}})", R"({"next":{"v":1}})"}},
      {R"({"definitions":{"node":{"type":"object","properties":{"kids":{"type":"array",
          "items":{"$ref":"#/definitions/node"}}},"additionalProperties":false}},
          "$ref":"#/definitions/node"})",
       {"{}", R"({"kids":[{},{"kids":[{"kids":[]}]}]})"},
       {R"({"kids":[1]})"}},
      // JSON-pointer escapes and percent-encoding.
      {R"({"definitions":{"a/b":{"type":"integer"},"c~d":{"type":"string"},"e%f":{"type":"null"}},
          "items":[{"$ref":"#/definitions/a~1b"},{"$ref":"#/definitions/c~0d"},
                   {"$ref":"#/definitions/e%25f"}],"type":"array"})",
       {"[1,\"x\",null]"},
       {"[\"x\"]", "[1,1]", "[1,\"x\",1]"}},
      {R"({"items":[{"type":"integer"},{"$ref":"#/items/0"}],"type":"array"})",
       {"[1,2]"},
       {"[1,\"a\"]"}},
      // $id: relative references, and plain-name fragments.
      {R"({"$id":"http://example.com/root.json","definitions":{
            "a":{"$id":"other.json","type":"integer"},
            "b":{"$id":"#bee","type":"string"}},
          "type":"array","items":[{"$ref":"other.json"},{"$ref":"#bee"},
                                  {"$ref":"http://example.com/root.json#/definitions/a"}]})",
       {"[1,\"x\",2]"},
       {"[\"x\"]", "[1,2]"}},
      {R"({"definitions":{"t":true,"f":false},"type":"array","items":[{"$ref":"#/definitions/t"},
          {"$ref":"#/definitions/f"}]})",
       {"[]", "[1]"},
       {"[1,2]"}},
  });
}

TEST(JsonSchema, AnyValueDepth) {
  JsonSchemaOptions shallow;
  shallow.max_any_depth = 1;
  ExpectCases({{"{}", {"[1,2]", R"({"a":"b"})", "3"}, {"[[1]]", R"({"a":{}})"}}}, shallow);
  shallow.max_any_depth = 0;
  ExpectCases({{"{}", {"1", "\"x\"", "null"}, {"[]", "{}"}}}, shallow);
  ExpectCases({{"{}", {"[[[[[[[[1]]]]]]]]"}, {"[[[[[[[[[1]]]]]]]]]"}}});
}

TEST(JsonSchema, AnyJsonObject) {
  const Grammar g = AnyJsonObjectGrammar();
  for (const char* s : {"{}", R"({"a":1})", R"({"a":[1,{"b":null}],"c":"\n"})"}) {
    EXPECT_TRUE(Matches(g, s)) << s;
  }
  for (const char* s : {"[]", "1", "\"x\"", "null", "{", R"({"a"})", R"({'a':1})"}) {
    EXPECT_FALSE(Matches(g, s)) << s;
  }
  JsonSchemaOptions flat;
  flat.max_any_depth = 0;  // an object still holds scalars
  const Grammar f = AnyJsonObjectGrammar(flat);
  EXPECT_TRUE(Matches(f, R"({"a":1})"));
  EXPECT_FALSE(Matches(f, R"({"a":[]})"));
}

// An OpenAI strict-mode style schema, end to end.
TEST(JsonSchema, StructuredOutputsExample) {
  const std::string schema = R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
      "kind": {"enum": ["person", "robot"]}
    },
    "required": ["name", "age", "tags", "kind"],
    "additionalProperties": false,
    "$defs": {"tag": {"type": "object", "properties": {"label": {"type": "string"}},
                      "required": ["label"], "additionalProperties": false}}
  })";
  ExpectCases({{schema,
                {R"({"name":"Ann","age":30,"tags":[],"kind":"person"})",
                 R"({"name":"R2","age":null,"tags":[{"label":"x"},{"label":""}],"kind":"robot"})"},
                {R"({"name":"Ann","age":151,"tags":[],"kind":"person"})",
                 R"({"name":"Ann","age":30,"tags":[],"kind":"cat"})",
                 R"({"name":"Ann","age":30,"tags":[{}],"kind":"person"})",
                 R"({"age":30,"name":"Ann","tags":[],"kind":"person"})",
                 R"({"name":"Ann","age":30,"tags":[],"kind":"person","x":1})",
                 R"({"name": "Ann","age":30,"tags":[],"kind":"person"})"}}});
}

// ----- errors: every path names the keyword and the place

TEST(JsonSchema, UnsupportedKeywords) {
  for (const char* k :
       {"not", "if", "then", "else", "dependencies", "patternProperties", "propertyNames",
        "contains", "multipleOf", "minProperties", "maxProperties", "prefixItems",
        "unevaluatedProperties", "nullable", "contentMediaType", "$anchor", "dependentRequired"}) {
    const std::string schema =
        std::string(R"({"properties":{"a/b":{"type":"object","properties":{"x":{")") + k +
        R"(":{}}}}}})";
    ExpectError(schema, {"keyword '" + std::string(k) + "'", "at /properties/a~1b/properties/x",
                         "is not supported ("});
  }
  ExpectError(R"({"minLenght":1})", {"keyword 'minLenght' at / is not supported", "unknown"});
  ExpectError(R"({"items":{"uniqueItems":true}})",
              {"keyword 'uniqueItems' at /items is not supported"});
  ExpectCases({{R"({"uniqueItems":false})", {"[1,1]"}, {}}});
  ExpectError(R"({"format":"hostname"})",
              {"keyword 'format' at / is not supported", "'hostname'", "pattern"});
  ExpectError(R"({"type":"number","minimum":1e-7})",
              {"keyword 'minimum' at / is not supported", "1e-6"});
  ExpectError(R"({"properties":{"p":{"exclusiveMaximum":-0.0000005}}})",
              {"keyword 'exclusiveMaximum' at /properties/p is not supported"});
  ExpectError(R"({"type":"string","pattern":"^a","maxLength":3})",
              {"keyword 'maxLength' at / is not supported", "pattern"});
  ExpectError(R"({"type":"string","format":"email","minLength":3})",
              {"keyword 'minLength' at / is not supported", "format"});
  ExpectError(R"({"type":"string","format":"email","pattern":"x"})",
              {"keyword 'pattern' at / is not supported", "format"});
  ExpectError(R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})",
              {"keyword 'pattern' at /allOf/1 is not supported"});
  ExpectError(R"js({"type":"string","pattern":"(?=a)"})js",
              {"keyword 'pattern' at /", "not supported"});
  ExpectError(R"({"$ref":"http://example.com/s.json"})",
              {"keyword '$ref' at / is not supported", "http://example.com/s.json", "definitions"});
  ExpectError(R"({"properties":{"a":{"$ref":"other.json#/x"}}})",
              {"keyword '$ref' at /properties/a is not supported"});
  ExpectError(R"({"$schema":"http://json-schema.org/draft-04/schema#"})",
              {"keyword '$schema' at / is not supported", "draft 7"});
  std::string nine = R"({"anyOf":[)";
  for (int i = 0; i < 9; ++i) nine += (i ? "," : "") + (R"({"const":)" + std::to_string(i) + "}");
  nine += "]}";
  const std::string product = R"({"allOf":[)" + nine + "," + nine + "]}";
  ExpectError(product, {"keyword 'anyOf' at /allOf/1 is not supported", "64"});
}

TEST(JsonSchema, BadValues) {
  ExpectError(R"({"type":"strnig"})", {"keyword 'type' at /", "\"strnig\"", "integer or string"});
  ExpectError(R"({"type":[]})", {"keyword 'type' at /", "empty"});
  ExpectError(R"({"type":["string",1]})", {"keyword 'type' at /", "1"});
  ExpectError(R"({"properties":{"a":{"minLength":-1}}})",
              {"keyword 'minLength' at /properties/a", "non-negative integer", "-1"});
  ExpectError(R"({"maxItems":1.5})", {"keyword 'maxItems' at /", "non-negative integer"});
  ExpectError(R"({"minLength":"2"})", {"keyword 'minLength' at /", "non-negative integer"});
  ExpectError(R"({"required":"a"})", {"keyword 'required' at /", "array of property names"});
  ExpectError(R"({"required":[1]})", {"keyword 'required' at /", "strings"});
  ExpectError(R"({"properties":[]})", {"keyword 'properties' at /", "object"});
  ExpectError(R"({"properties":{"a":1}})", {"keyword 'properties' at /", "'a'"});
  ExpectError(R"({"additionalProperties":1})", {"keyword 'additionalProperties' at /", "schema"});
  ExpectError(R"({"items":1})", {"keyword 'items' at /", "schema"});
  ExpectError(R"({"items":[1]})", {"keyword 'items' at /", "schemas"});
  ExpectError(R"({"additionalItems":"x"})", {"keyword 'additionalItems' at /", "schema"});
  ExpectError(R"({"minimum":"1"})", {"keyword 'minimum' at /", "number"});
  ExpectError(R"({"type":"integer","exclusiveMinimum":true,"minimum":1})",
              {"keyword 'exclusiveMinimum' at /", "draft 4", "\"exclusiveMinimum\": <bound>"});
  ExpectError(R"({"enum":1})", {"keyword 'enum' at /", "array"});
  ExpectError(R"({"anyOf":[]})", {"keyword 'anyOf' at /", "non-empty"});
  ExpectError(R"({"allOf":{}})", {"keyword 'allOf' at /", "non-empty"});
  ExpectError(R"({"anyOf":[1]})", {"keyword 'anyOf' at /", "schemas"});
  ExpectError(R"({"pattern":1})", {"keyword 'pattern' at /", "string"});
  ExpectError(R"({"format":1})", {"keyword 'format' at /", "string"});
  ExpectError(R"({"uniqueItems":"yes"})", {"keyword 'uniqueItems' at /", "boolean"});
  ExpectError(R"({"definitions":[]})", {"keyword 'definitions' at /", "object"});
  ExpectError(R"({"$ref":1})", {"keyword '$ref' at /", "string"});
  ExpectError(R"({"$id":1})", {"keyword '$id' at /", "string"});
  ExpectError(R"({"type":"string","pattern":"a("})", {"keyword 'pattern' at /"});
  ExpectError(R"({"properties":{"a":{"$ref":"#/definitions/missing"}}})",
              {"keyword '$ref' at /properties/a", "#/definitions/missing", "does not exist"});
  ExpectError(R"({"items":{"$ref":"#nowhere"}})", {"keyword '$ref' at /items", "#nowhere"});
  ExpectError(R"({"items":[{"$ref":"#/items/5"}]})", {"keyword '$ref' at /items/0", "'5'"});
}

TEST(JsonSchema, NotASchema) {
  ExpectError("", {"not valid JSON"});
  ExpectError("{\"type\":", {"not valid JSON"});
  ExpectError("{\"type\":\"string\"} x", {"not valid JSON"});
  ExpectError("1", {"must be a JSON object or a boolean"});
  ExpectError("[]", {"must be a JSON object or a boolean"});
  ExpectError(R"({"definitions":{"a":3},"$ref":"#/definitions/a"})",
              {"schema at /definitions/a", "object or a boolean"});
  JsonSchemaOptions bad;
  bad.max_any_depth = -1;
  EXPECT_NE(ErrorOf("{}", bad).find("max_any_depth"), std::string::npos);
  bad.max_any_depth = 1000;
  EXPECT_NE(ErrorOf("{}", bad).find("max_any_depth"), std::string::npos);
}

TEST(JsonSchema, ReferenceCyclesAndEmptyLanguages) {
  ExpectError(R"({"$ref":"#"})", {"keyword '$ref' at /", "cycle"});
  ExpectError(R"({"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}},
                  "properties":{"x":{"$ref":"#/definitions/a"}}})",
              {"keyword '$ref' at /properties/x", "cycle"});
  ExpectError(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})",
              {"schema at /", "left recursion", "object property or an array item"});
  ExpectError(R"({"definitions":{"a":{"anyOf":[{"type":"null"},{"$ref":"#/definitions/a"}]}},
                  "type":"array","items":{"$ref":"#/definitions/a"}})",
              {"schema at /definitions/a", "left recursion"});
  // Required recursion without a base case has no finite instance.
  ExpectError(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})",
              {"accepts no JSON value"});
  // allOf cycles merge each schema once.
  ExpectCases({{R"({"definitions":{"a":{"allOf":[{"$ref":"#/definitions/a"},{"type":"null"}]}},
                   "$ref":"#/definitions/a"})",
                {"null"},
                {"1"}}});
  // anyOf next to other keywords expands a recursive branch without end.
  ExpectError(R"({"type":"object","anyOf":[{"$ref":"#"}]})", {"expands"});
}

TEST(JsonSchema, HostileInput) {
  ExpectError(std::string(100000, '['), {"nests more than"});
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += R"({"items":)";
  deep += "{}";
  for (int i = 0; i < 300; ++i) deep += "}";
  ExpectError(deep, {"nests more than"});
  ExpectError(R"({"type":"string","maxLength":1000000000})",
              {"keyword 'maxLength' at / is not supported", "10000"});
  ExpectError(R"({"type":"string","minLength":1e300})", {"keyword 'minLength' at /"});
  ExpectError(R"({"type":"array","minItems":20000})", {"keyword 'minItems' at / is not supported"});
  EXPECT_EQ(ErrorOf(R"({"type":"integer","minimum":1e308,"maximum":1.7e308})"), "");
  std::string wide = R"({"enum":[1],"definitions":{)";
  for (int i = 0; i < 10001; ++i) wide += (i ? "," : "") + ("\"d" + std::to_string(i) + "\":{}");
  wide += "}}";
  ExpectError(wide, {"more than 10000 members"});
  std::string lengths = R"({"type":"array","items":[)";
  for (int i = 0; i < 21; ++i) {
    lengths +=
        (i ? "," : "") + (R"({"type":"string","maxLength":)" + std::to_string(10000 - i) + "}");
  }
  lengths += "]}";
  ExpectError(lengths, {"too large a grammar", "200000 rules"});
  // Large but legal: many properties, a long enum, big bounds.
  std::string props = R"({"type":"object","properties":{)";
  for (int i = 0; i < 2000; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + "\":{}");
  props += "}}";
  const Grammar g = CompileJsonSchema(props);
  EXPECT_TRUE(Matches(g, R"({"p0":1,"p1999":2,"p2000":3})"));
  EXPECT_FALSE(Matches(g, R"({"p1999":2,"p0":1})"));
  ExpectCases({{R"({"type":"integer","minimum":-1e300,"maximum":1e300})",
                {"0", "-123", "9999999999999999999999999999999"},
                {"1" + std::string(301, '0')}}});
}

}  // namespace
}  // namespace ebb::constrain
