// Structured output inside generation, on real tokenizers: the synthesized llama (byte-level BPE)
// and stories260k (SentencePiece with byte fallback, ../shared). Random schemas from the test's
// own generator run greedy and sampled; every output must be complete JSON that the compiled
// grammar accepts, and ajv (Debian's node-ajv, written by nobody here) must validate it against
// the schema. Also: the mask applies before sampling, EOS only where the text is complete, a
// token limit mid-structure ends with "length" and the partial text, forced tokens skip model
// steps, rows and concurrent requests keep their own constraints, and bad constraints are
// refused with their reason before any KV is reserved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "constrain/grammar.h"
#include "constrain/json_schema.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::shared_ptr<Model> LoadTiny() {
  return ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32");
}

std::shared_ptr<Model> LoadStories() {
  const fs::path dir = testing::SharedDir() / "models" / "stories260k";
  if (!fs::exists(dir / "model.onnx")) return nullptr;
  return ebb::LoadModel(dir);
}

// Random schemas whose instances are bounded (every string, array and number has a limit and
// objects allow no additional properties), so a model that picks tokens at random still ends.
class SchemaGen {
 public:
  explicit SchemaGen(uint32_t seed) : rng_(seed) {}
  Json Make(int depth = 0) {
    const int kind = Pick(depth >= 2 ? 6 : 8);
    switch (kind) {
      case 0:
        return {{"type", "string"}, {"maxLength", Pick(8)}};
      case 1: {
        const int lo = Pick(200) - 100;
        return {{"type", "integer"}, {"minimum", lo}, {"maximum", lo + Pick(1000)}};
      }
      case 2:
        return {{"type", "boolean"}};
      case 3:
        return {{"enum", Json::array({"red", "green", 7, nullptr})}};
      case 4:
        return {{"type", "string"}, {"pattern", "^[a-f0-9]{2,6}$"}};
      case 5:
        return {{"type", "string"}, {"format", Pick(2) ? "date" : "uuid"}};
      case 6: {
        return {{"type", "array"}, {"items", Make(depth + 1)}, {"maxItems", Pick(3)}};
      }
      default: {
        Json props = Json::object();
        Json required = Json::array();
        const int n = 1 + Pick(3);
        for (int i = 0; i < n; ++i) {
          const std::string name = "p" + std::to_string(depth) + std::to_string(i);
          props[name] = Make(depth + 1);
          if (Pick(2)) required.push_back(name);
        }
        Json o = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
        if (!required.empty()) o["required"] = required;
        return o;
      }
    }
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  std::mt19937 rng_;
};

struct Outcome {
  std::string schema;
  std::string text;
  std::string finish;
};

// Runs `n` random schemas on `model`, alternating greedy and sampled decoding; checks each
// output against the compiled grammar and returns them for ajv.
std::vector<Outcome> RunSchemas(const std::shared_ptr<Model>& model, int n, uint32_t seed) {
  SchemaGen gen(seed);
  std::vector<Outcome> out;
  for (int i = 0; i < n; ++i) {
    Json schema = gen.Make();
    if (schema.value("type", "") != "object") {
      schema = {{"type", "object"},
                {"properties", {{"v", schema}}},
                {"required", {"v"}},
                {"additionalProperties", false}};
    }
    GenerateRequest req;
    req.prompt = "Once upon a time";
    req.params.json_schema = schema.dump();
    req.params.do_sample = i % 2 == 1;
    req.params.temperature = 1.5f;
    req.params.seed = static_cast<uint64_t>(i);
    req.max_new_tokens = 400;
    const GenerateResult r = Generate(model, req);
    const GenerateRow& row = r.rows.at(0);
    out.push_back({schema.dump(), row.text, std::string(FinishReasonName(row.finish_reason))});
    EXPECT_EQ(row.finish_reason, FinishReason::kStop)
        << "schema " << schema.dump() << " gave '" << row.text << "'";
    const constrain::Grammar g = constrain::CompileJsonSchema(schema.dump());
    EXPECT_TRUE(constrain::Matches(g, row.text)) << schema.dump() << " -> " << row.text;
    EXPECT_TRUE(Json::accept(row.text)) << row.text;
  }
  return out;
}

// ajv's verdict on every (schema, output) pair; skips when node or ajv is missing.
void ValidateWithAjv(const std::vector<Outcome>& outcomes, const std::string& tag) {
  // NodeSource's node does not search Debian's module folder; node-ajv lives there.
  const std::string node = "NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH} node";
  if (std::system((node + " -e \"require('ajv')\" >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "node with ajv is not installed (Debian: apt-get install node-ajv; "
                    "scripts/bootstrap installs it): outputs were checked against ebb's own "
                    "grammar only";
  }
  testing::TempDir dir("ajv");
  const fs::path file = dir.path() / (tag + ".jsonl");
  {
    std::ofstream f(file);
    for (const Outcome& o : outcomes) {
      f << Json{{"schema", Json::parse(o.schema)}, {"text", o.text}}.dump() << "\n";
    }
  }
  const std::string script = std::string(EBB_SOURCE_DIR) + "/tests/constrain/ajv_validate.js";
  const testing::CliResult r = testing::RunShell(node + " " + script + " " + file.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("valid " + std::to_string(outcomes.size()) + "/"), std::string::npos)
      << r.out;
}

TEST(StructuredGeneration, RandomSchemasGiveValidJsonOnTheSynthesizedModel) {
  const auto model = LoadTiny();
  const auto outcomes = RunSchemas(model, 200, 1);
  ValidateWithAjv(outcomes, "tiny");
}

TEST(StructuredGeneration, RandomSchemasGiveValidJsonOnStories260k) {
  const auto model = LoadStories();
  if (!model) {
    GTEST_SKIP() << "no " << (testing::SharedDir() / "models" / "stories260k")
                 << " (the external fixtures in ../shared)";
  }
  const auto outcomes = RunSchemas(model, 200, 2);
  ValidateWithAjv(outcomes, "stories");
}

TEST(StructuredGeneration, RegexAndGrammarConstrainTheWholeText) {
  const auto model = LoadTiny();
  GenerateRequest req;
  req.prompt = "Hello";
  req.params.regex = "(yes|no), [0-9]{3}";
  req.max_new_tokens = 40;
  GenerateResult r = Generate(model, req);
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kStop);
  EXPECT_TRUE(r.rows[0].text.rfind("yes, ", 0) == 0 || r.rows[0].text.rfind("no, ", 0) == 0)
      << r.rows[0].text;
  EXPECT_EQ(r.rows[0].text.size(), r.rows[0].text.rfind(", ") + 5) << r.rows[0].text;
  GenerateRequest g;
  g.prompt = "Hello";
  g.params.grammar = "root ::= \"(\" item (\",\" item)* \")\"\nitem ::= [a-c]{1,3}\n";
  g.params.do_sample = true;
  g.max_new_tokens = 200;
  r = Generate(model, g);
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kStop);
  ASSERT_GE(r.rows[0].text.size(), 3u);
  EXPECT_EQ(r.rows[0].text.front(), '(');
  EXPECT_EQ(r.rows[0].text.back(), ')');
  EXPECT_EQ(r.rows[0].text.find_first_not_of("(),abc"), std::string::npos) << r.rows[0].text;
}

TEST(StructuredGeneration, TheTokenLimitMidStructureEndsWithLengthAndThePartialText) {
  const auto model = LoadTiny();
  GenerateRequest req;
  req.prompt = "Hello";
  req.params.json_schema =
      R"({"type":"object","properties":{"a":{"type":"string","minLength":50}},"required":["a"]})";
  req.max_new_tokens = 5;
  const GenerateResult r = Generate(model, req);
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.rows[0].text.rfind("{\"a\":\"", 0), 0u) << r.rows[0].text;
  EXPECT_EQ(r.rows[0].text.find('}'), std::string::npos) << "ebb closed the JSON itself";
}

TEST(StructuredGeneration, ForcedTokensSkipModelSteps) {
  const auto model = LoadTiny();
  // Everything but the two values is forced.
  const std::string schema =
      R"({"type":"object","properties":{"a_long_property_name":{"type":"boolean"},)"
      R"("another_long_property_name":{"enum":["only"]}},"required":["a_long_property_name",)"
      R"("another_long_property_name"],"additionalProperties":false})";
  GeneratorParams p;
  p.json_schema = schema;
  p.max_length = 200;
  Generator g(model, p);
  const std::vector<int32_t> prompt = model->tokenizer()->Encode("Hi", true);
  g.AppendTokens(prompt);
  std::vector<int32_t> out;
  while (!g.done()) {
    g.GenerateNextToken();
    out.push_back(g.GetNextTokens()[0]);
  }
  const std::string text = model->tokenizer()->Decode(out, true);
  EXPECT_TRUE(text == R"({"a_long_property_name":true,"another_long_property_name":"only"})" ||
              text == R"({"a_long_property_name":false,"another_long_property_name":"only"})")
      << text;
  const GeneratorStats s = g.Stats();
  // The prompt's run, one step to choose the boolean, and one run of what follows it.
  EXPECT_LE(s.model_runs, 4u) << "tokens " << out.size();
  EXPECT_GT(out.size(), s.model_runs * 3);
}

TEST(StructuredGeneration, EachRowAndEachConcurrentRequestHasItsOwnConstraint) {
  const auto model = LoadTiny();
  GeneratorParams p;
  p.regex = "[a-z]{4}";
  p.batch_size = 3;
  p.do_sample = true;
  p.seed = 5;
  p.max_length = 40;
  Generator g(model, p);
  const std::vector<int32_t> prompt = model->tokenizer()->Encode("Hi", true);
  g.AppendTokens(std::vector<std::vector<int32_t>>{prompt, prompt, prompt});
  while (!g.done()) g.GenerateNextToken();
  for (size_t b = 0; b < 3; ++b) {
    auto seq = g.sequence(b);
    std::vector<int32_t> gen(seq.begin() + static_cast<long>(prompt.size()), seq.end());
    const std::string text = model->tokenizer()->Decode(gen, true);
    EXPECT_EQ(text.size(), 4u) << "row " << b << ": " << text;
    EXPECT_EQ(text.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), std::string::npos) << text;
  }
  // Concurrent requests with different constraints on one model.
  std::vector<std::string> texts(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      GenerateRequest req;
      req.prompt = "Hi";
      if (i % 2) {
        req.params.regex = "[0-9]{5}";
      } else {
        req.params.json_schema =
            R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2})";
      }
      req.max_new_tokens = 60;
      texts[static_cast<size_t>(i)] = Generate(model, req).rows[0].text;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    const std::string& t = texts[static_cast<size_t>(i)];
    if (i % 2) {
      EXPECT_EQ(t.size(), 5u) << t;
      EXPECT_EQ(t.find_first_not_of("0123456789"), std::string::npos) << t;
    } else {
      const Json j = Json::parse(t);
      ASSERT_TRUE(j.is_array()) << t;
      EXPECT_EQ(j.size(), 2u) << t;
    }
  }
  // One cache lookup per generator (the batch's rows share theirs): 5 in all. Two concurrent
  // requests with the same text may both miss and compile (one entry is kept), so only the sum
  // and the entries are exact.
  const MemoryStats s = model->runtime().Stats();
  EXPECT_EQ(s.constraints.entries, 3u);
  EXPECT_EQ(s.constraints.hits + s.constraints.misses, 5u);
  EXPECT_GE(s.constraints.misses, 3u);
  EXPECT_GT(s.constraints.bytes, 0u);
  EXPECT_GT(s.constraints.vocabulary_bytes, 0u);
}

TEST(StructuredGeneration, BadConstraintsAreRefusedBeforeAnyKvIsReserved) {
  const auto model = LoadTiny();
  auto refused = [&](const GeneratorParams& p, const std::string& want) {
    const uint64_t kv_before = model->runtime().Stats().kv.in_use_bytes;
    try {
      Generator g(model, p);
      ADD_FAILURE() << "accepted; want an error containing " << want;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    EXPECT_EQ(model->runtime().Stats().kv.in_use_bytes, kv_before);
  };
  GeneratorParams p;
  p.json_schema = R"({"type":"object","properties":{"a":{"not":{"type":"string"}}}})";
  refused(p, "not");
  p.json_schema = "{not json";
  refused(p, "json_schema");
  p.json_schema.clear();
  p.regex = "(a";
  refused(p, "regex");
  p.regex.clear();
  p.grammar = "root ::= item";
  refused(p, "item");
  p.grammar.clear();
  p.constraint_trigger = "<call>";
  refused(p, "constraint_trigger");
  GeneratorParams two;
  two.regex = "a";
  two.grammar = "root ::= \"a\"";
  refused(two, "not regex and grammar");
  GeneratorParams ok;
  ok.regex = "a+";
  Generator g(model, ok);
  g.AppendTokens(model->tokenizer()->Encode("Hi", true));
  EXPECT_THROW(g.RewindTo(1), Error);
}

TEST(StructuredGeneration, RequestKeysSetTheConstraintOnEverySurface) {
  GenerateRequest req;
  req.Set("json_schema", R"({"type":"boolean"})");
  req.Set("regex", "x");
  req.Set("grammar", "root ::= \"x\"");
  req.Set("constraint_trigger", "<call>");
  EXPECT_EQ(req.params.json_schema, R"({"type":"boolean"})");
  EXPECT_EQ(req.params.regex, "x");
  EXPECT_EQ(req.params.grammar, "root ::= \"x\"");
  EXPECT_EQ(req.params.constraint_trigger, "<call>");
}

}  // namespace
}  // namespace ebb
