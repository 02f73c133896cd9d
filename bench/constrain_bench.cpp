// Microbenchmarks of the constraint engine (src/constrain/, docs/structured_output.md):
//   compiling a 20-property nested JSON Schema (issue 37 reports this figure);
//   compiling a regex and a GBNF grammar;
//   a token mask over a 32k byte-level vocabulary inside a JSON string and at an object's key
//   (the per-position cache warm, as in a service that has seen the schema), and a first mask
//   with the cache cold.
// The per-token cost inside a real generation, beside the decode step, is `ebb bench
// --json-schema FILE --compare seed-loop,constrained=true` (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "constrain/constraint.h"
#include "constrain/gbnf.h"
#include "constrain/grammar.h"
#include "constrain/json_schema.h"
#include "constrain/regex.h"

namespace {

using namespace ebb::constrain;

// 20 properties, 4 of them objects of 4 more, strings with lengths, integers with ranges, enums,
// an array and a format: the shape of a typical extraction schema.
std::string Schema20() {
  std::string props;
  for (int i = 0; i < 20; ++i) {
    if (i) props += ",";
    const std::string name = "\"field_" + std::to_string(i) + "\":";
    switch (i % 5) {
      case 0:
        props += name + R"({"type":"string","maxLength":40})";
        break;
      case 1:
        props += name + R"({"type":"integer","minimum":-1000,"maximum":1000000})";
        break;
      case 2:
        props += name + R"({"enum":["red","green","blue",null]})";
        break;
      case 3:
        props +=
            name + R"({"type":"array","items":{"type":"string","format":"date"},"maxItems":4})";
        break;
      default:
        props += name +
                 R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"number"},)"
                 R"("c":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{4}$"},"d":{"type":"integer"}},)"
                 R"("required":["a","b","c","d"],"additionalProperties":false})";
    }
  }
  return R"({"type":"object","properties":{)" + props + R"(},"additionalProperties":false})";
}

void BM_CompileJsonSchema20Properties(benchmark::State& state) {
  const std::string schema = Schema20();
  for (auto _ : state) {
    Grammar g = CompileJsonSchema(schema);
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_CompileJsonSchema20Properties)->Unit(benchmark::kMillisecond);

void BM_CompileRegex(benchmark::State& state) {
  for (auto _ : state) {
    Grammar g;
    g.set_root(CompileRegex(g, R"((\+?[0-9]{1,3}[ -])?\(?[0-9]{3}\)?[ -]?[0-9]{3}-[0-9]{4})", {}));
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_CompileRegex)->Unit(benchmark::kMicrosecond);

void BM_CompileGbnf(benchmark::State& state) {
  const std::string text = R"(root ::= object
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ( string ":" value ("," string ":" value)* )? "}"
array ::= "[" ( value ("," value)* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})?
)";
  for (auto _ : state) {
    Grammar g = ParseGbnf(text);
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_CompileGbnf)->Unit(benchmark::kMicrosecond);

// A byte-level-BPE-like vocabulary of 32,000 tokens: the 256 bytes, then random pieces of
// lower-case text with leading spaces, punctuation pieces (`",`, `":`, `"}`), digits.
std::shared_ptr<const TokenTrie> Vocabulary32k() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* p : {"\",", "\":", "\"}", "{\"", "\":\"", "\",\"", "},", "}}", "],", "[\""}) {
    v.emplace_back(p);
  }
  std::mt19937 rng(3);
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  while (v.size() < 32000) {
    std::string t = (rng() % 2) ? " " : "";
    const size_t n = 1 + rng() % 8;
    for (size_t i = 0; i < n; ++i) t += letters[std::min<size_t>(rng() % 26, rng() % 26)];
    if (rng() % 10 == 0) t += std::to_string(rng() % 100);
    v.push_back(std::move(t));
  }
  return std::make_shared<const TokenTrie>(std::move(v));
}

void Mask(benchmark::State& state, const std::string& prefix, bool warm) {
  static const auto trie = Vocabulary32k();
  ConstraintSpec spec;
  spec.text = Schema20();
  auto c = CompiledConstraint::Compile(spec, trie);
  std::vector<uint64_t> mask;
  auto advanced = [&] {
    auto s = std::make_unique<ConstraintState>(c);
    for (const char ch : prefix) {
      const int32_t t = trie->LongestPrefixToken(std::string(1, ch));
      if (!s->Accept(t, {})) state.SkipWithError("prefix refused");
    }
    return s;
  };
  auto s = advanced();
  if (warm) s->FillMask(mask, {});
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      c = CompiledConstraint::Compile(spec, trie);
      s = advanced();
      state.ResumeTiming();
    }
    s->FillMask(mask, {});
    benchmark::DoNotOptimize(mask.data());
  }
}

void BM_MaskInsideAString(benchmark::State& state) { Mask(state, R"({"field_0":"abc)", true); }
BENCHMARK(BM_MaskInsideAString)->Unit(benchmark::kMicrosecond);
void BM_MaskAfterAValue(benchmark::State& state) { Mask(state, R"({"field_0":"abc",)", true); }
BENCHMARK(BM_MaskAfterAValue)->Unit(benchmark::kMicrosecond);
void BM_MaskInsideAStringCold(benchmark::State& state) { Mask(state, R"({"field_0":"abc)", false); }
BENCHMARK(BM_MaskInsideAStringCold)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
