// Tool-call syntax per model family: detection on the real templates in data/, parsing of model
// output (whole and streamed at every split), the grammar schema, and rendering tool-call history
// through the real templates (compared with the reference Jinja2 renders where data/ has one).
#include "template/tool_calls.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "template_test_util.h"

namespace ebb::internal {
namespace {

using Json = nlohmann::ordered_json;
using testing::FixedNow;
using testing::ReadText;
using testing::TemplateDataDir;

ToolCallSyntax Syntax(ToolCallFamily f) { return ToolCallSyntaxFor(f); }

std::string TemplateSource(const std::string& file) { return ReadText(TemplateDataDir() / file); }

// Name and compact arguments of each call (ids are checked separately).
std::vector<std::pair<std::string, std::string>> Calls(const ParsedOutput& out) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& c : out.calls) v.emplace_back(c.name, c.arguments_json);
  return v;
}

using CallList = std::vector<std::pair<std::string, std::string>>;

// --- Detection ---

TEST(ToolCalls, DetectsTheFamilyOfEachRealTemplate) {
  const std::map<std::string, ToolCallFamily> expected = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFamily::kHermes},
      {"google-gemma-2-2b-it.jinja", ToolCallFamily::kNone},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFamily::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFamily::kLlama3Json},
      {"microsoft-Phi-3.5-mini-instruct.jinja", ToolCallFamily::kNone},
      {"microsoft-Phi-4-mini-instruct.jinja", ToolCallFamily::kPhi4Mini},
      {"microsoft-phi-4.jinja", ToolCallFamily::kNone},
      {"mistralai-Mistral-7B-Instruct-v0.3.jinja", ToolCallFamily::kMistral},
  };
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TemplateDataDir())) {
    if (entry.path().extension() != ".jinja") continue;
    std::string file = entry.path().filename().string();
    auto it = expected.find(file);
    ASSERT_NE(it, expected.end()) << "add the expected family of " << file;
    ToolCallSyntax s = DetectToolCallSyntax(ReadText(entry.path()));
    EXPECT_EQ(ToolCallFamilyName(s.family), ToolCallFamilyName(it->second)) << file;
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

TEST(ToolCalls, DetectionOfSyntheticTemplates) {
  EXPECT_EQ(DetectToolCallSyntax("").family, ToolCallFamily::kNone);
  EXPECT_EQ(DetectToolCallSyntax("{{ messages[0].content }}").family, ToolCallFamily::kNone);
  // A Llama 3 template without tools (3.0) is kNone.
  EXPECT_EQ(DetectToolCallSyntax("<|start_header_id|>{{ m.role }}<|end_header_id|>").family,
            ToolCallFamily::kNone);
  // Hermes fine-tunes of Llama 3 use Llama's headers and Hermes' tags: Hermes wins.
  EXPECT_EQ(DetectToolCallSyntax("<|start_header_id|>{% if tools %}<tool_call>{% endif %}"
                                 "\"parameters\"")
                .family,
            ToolCallFamily::kHermes);
  EXPECT_EQ(DetectToolCallSyntax("{{ '<|python_tag|>' }}").family, ToolCallFamily::kLlama3Json);
  EXPECT_EQ(DetectToolCallSyntax("{{ '<|tool_call|>' }}").family, ToolCallFamily::kPhi4Mini);
}

TEST(ToolCalls, FamilyNamesAndSyntaxFields) {
  EXPECT_EQ(ToolCallFamilyName(ToolCallFamily::kNone), "none");
  EXPECT_EQ(ToolCallFamilyName(ToolCallFamily::kLlama3Json), "llama3_json");
  EXPECT_EQ(ToolCallFamilyName(ToolCallFamily::kHermes), "hermes");
  EXPECT_EQ(ToolCallFamilyName(ToolCallFamily::kMistral), "mistral");
  EXPECT_EQ(ToolCallFamilyName(ToolCallFamily::kPhi4Mini), "phi4_mini");

  EXPECT_TRUE(Syntax(ToolCallFamily::kNone).triggers().empty());
  EXPECT_EQ(Syntax(ToolCallFamily::kLlama3Json).triggers(),
            (std::vector<std::string>{"{\"name\"", "<|python_tag|>"}));
  EXPECT_EQ(Syntax(ToolCallFamily::kHermes).trigger, "<tool_call>");
  EXPECT_EQ(Syntax(ToolCallFamily::kHermes).end, "</tool_call>");
  EXPECT_EQ(Syntax(ToolCallFamily::kMistral).trigger, "[TOOL_CALLS]");
  EXPECT_EQ(Syntax(ToolCallFamily::kPhi4Mini).trigger, "<|tool_call|>");
  EXPECT_EQ(Syntax(ToolCallFamily::kPhi4Mini).end, "<|/tool_call|>");
  EXPECT_EQ(Syntax(ToolCallFamily::kLlama3Json).arguments_key, "parameters");
  EXPECT_EQ(Syntax(ToolCallFamily::kMistral).shape, ToolCallShape::kArray);
  EXPECT_FALSE(Syntax(ToolCallFamily::kLlama3Json).parallel_calls);
}

// --- Parsing ---

TEST(ToolCalls, ParsesLlama3) {
  auto s = Syntax(ToolCallFamily::kLlama3Json);
  auto out = ParseToolCalls(
      s, R"({"name": "get_current_weather", "parameters": {"location": "Paris, France"}})");
  EXPECT_EQ(out.content, "");
  EXPECT_EQ(Calls(out), (CallList{{"get_current_weather", R"({"location":"Paris, France"})"}}));

  out = ParseToolCalls(s, "\n <|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}");
  EXPECT_EQ(out.content, "");
  EXPECT_EQ(Calls(out), (CallList{{"get_time", "{}"}}));

  out = ParseToolCalls(s, "Let me look.\n<|python_tag|>{\"name\": \"get_time\"}");
  EXPECT_EQ(out.content, "Let me look.");
  EXPECT_EQ(Calls(out), (CallList{{"get_time", "{}"}}));

  // Parallel calls chained with ';' (the template has no parallel form; models still write it).
  out = ParseToolCalls(
      s, R"({"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": [1, 2]}})");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"x":1})"}, {"b", R"({"y":[1,2]})"}}));

  // Arguments as a string holding an object; "arguments" instead of "parameters".
  out = ParseToolCalls(s, R"({"name": "a", "parameters": "{\"x\": 1}"})");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"x":1})"}}));
  out = ParseToolCalls(s, R"({"name": "a", "arguments": {"x": 1}})");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"x":1})"}}));

  // Text after a call is content.
  out = ParseToolCalls(s, R"({"name": "a", "parameters": {}} and then prose)");
  EXPECT_EQ(out.content, "and then prose");
  EXPECT_EQ(Calls(out), (CallList{{"a", "{}"}}));
}

TEST(ToolCalls, Llama3TextThatIsNotACallStaysContent) {
  auto s = Syntax(ToolCallFamily::kLlama3Json);
  for (std::string text : {
           std::string(R"({"name": "a", "parameters": {"x": 1})"),         // truncated
           std::string(R"({"name": "John", "age": 3})"),                   // ordinary JSON
           std::string(R"(The call is {"name": "a", "parameters": {}})"),  // mid-prose
           std::string(R"(<|python_tag|>brave_search.call(query="x"))"),   // builtin tool
           std::string(R"({"name": "a", "parameters": [1]})"),
           std::string(R"({"name": "", "parameters": {}})"),
           std::string(R"({"name": "a", "parameters": {}}; {"name": 1})"),
       }) {
    auto out = ParseToolCalls(s, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

TEST(ToolCalls, ParsesHermes) {
  auto s = Syntax(ToolCallFamily::kHermes);
  auto out = ParseToolCalls(s,
                            "<tool_call>\n{\"name\": \"get_current_weather\", \"arguments\": "
                            "{\"location\": \"Zürich\"}}\n</tool_call>");
  EXPECT_EQ(out.content, "");
  EXPECT_EQ(Calls(out), (CallList{{"get_current_weather", "{\"location\":\"Zürich\"}"}}));

  out = ParseToolCalls(s,
                       "I'll check both.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n"
                       "</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"q\": "
                       "\"] } \\\" [\"}}\n</tool_call>\n");
  EXPECT_EQ(out.content, "I'll check both.");
  EXPECT_EQ(Calls(out), (CallList{{"a", "{}"}, {"b", R"({"q":"] } \" ["})"}}));

  // Text after the calls; both sides; a missing </tool_call> at the end of the output.
  out = ParseToolCalls(s, "<tool_call>{\"name\": \"a\"}</tool_call>\nDone.");
  EXPECT_EQ(out.content, "Done.");
  out = ParseToolCalls(s, "Before. <tool_call>{\"name\": \"a\"}</tool_call> After.");
  EXPECT_EQ(out.content, "Before.\nAfter.");
  out = ParseToolCalls(s, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"x":1})"}}));
  // An array inside one block is read too.
  out = ParseToolCalls(s, "<tool_call>[{\"name\": \"a\"}, {\"name\": \"b\"}]</tool_call>");
  EXPECT_EQ(Calls(out), (CallList{{"a", "{}"}, {"b", "{}"}}));
}

TEST(ToolCalls, MalformedHermesIsAllContent) {
  auto s = Syntax(ToolCallFamily::kHermes);
  for (std::string text : {
           std::string("<tool_call>\n{\"name\": \"x\", \"arguments\": {\"a\": }\n</tool_call>"),
           std::string("ok <tool_call>\n{\"name\": \"a\"}\n</tool_call>\n<tool_call>\n{\"name\": "
                       "\"b\", \"arguments\": {\"a\": 1,}}\n</tool_call>"),
           std::string("<tool_call>{\"name\": \"a\"} and more text"),
           std::string("<tool_call>{\"arguments\": {}}</tool_call>"),
           std::string("<tool_call>{\"name\": \"a\", \"arguments\": 5}</tool_call>"),
           std::string("<tool_call>{\"name\": \"a\", \"arguments\": \"not json\"}</tool_call>"),
           std::string("<tool_call>\"a\"</tool_call>"),
           std::string("<tool_call>[]</tool_call>"),
           std::string("Use <tool_call> tags to call tools."),
           std::string("<tool_call>{\"name\": \"a\", \"arguments\": {\"s\": \"unterminated}}"),
           std::string(300, '[').insert(0, "<tool_call>"),
       }) {
    auto out = ParseToolCalls(s, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

TEST(ToolCalls, ParsesMistral) {
  auto s = Syntax(ToolCallFamily::kMistral);
  auto out = ParseToolCalls(s, R"([TOOL_CALLS] [{"name": "a", "arguments": {"tags": ["x", "y"]}}, )"
                               R"({"name": "b", "arguments": {}, "id": "abc123DEF"}])");
  EXPECT_EQ(out.content, "");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"tags":["x","y"]})"}, {"b", "{}"}}));

  out = ParseToolCalls(s, R"(Sure. [TOOL_CALLS][{"name": "a", "arguments": {"n": 2.5}}])");
  EXPECT_EQ(out.content, "Sure.");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"n":2.5})"}}));

  for (std::string text : {std::string(R"([TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}])"),
                           std::string("[TOOL_CALLS] []"), std::string("[TOOL_CALLS] nothing"),
                           std::string("[TOOL_CALLS]")}) {
    out = ParseToolCalls(s, text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty()) << text;
  }
}

TEST(ToolCalls, ParsesPhi4Mini) {
  auto s = Syntax(ToolCallFamily::kPhi4Mini);
  auto out = ParseToolCalls(s, R"(<|tool_call|>[{"name": "a", "arguments": {"x": 1}}, )"
                               R"({"name": "b", "arguments": {}}]<|/tool_call|>)");
  EXPECT_EQ(out.content, "");
  EXPECT_EQ(Calls(out), (CallList{{"a", R"({"x":1})"}, {"b", "{}"}}));

  // Content before; the closing tag missing at the end (the model often stops without it).
  out = ParseToolCalls(s, "Checking.<|tool_call|>[{\"name\": \"a\", \"arguments\": {}}]");
  EXPECT_EQ(out.content, "Checking.");
  EXPECT_EQ(Calls(out), (CallList{{"a", "{}"}}));

  std::string bad = "<|tool_call|>[{\"name\": \"a\", \"arguments\": {]<|/tool_call|>";
  out = ParseToolCalls(s, bad);
  EXPECT_EQ(out.content, bad);
  EXPECT_TRUE(out.calls.empty());
}

TEST(ToolCalls, NoFamilyMeansAllContent) {
  std::string text = "<tool_call>{\"name\": \"a\"}</tool_call>";
  auto out = ParseToolCalls(Syntax(ToolCallFamily::kNone), text);
  EXPECT_EQ(out.content, text);
  EXPECT_TRUE(out.calls.empty());
  // A family's parser ignores the others' markers.
  out = ParseToolCalls(Syntax(ToolCallFamily::kMistral), text);
  EXPECT_EQ(out.content, text);
}

TEST(ToolCalls, IdsAreCallPlus24AlphanumericsDeterministicPerSeed) {
  auto s = Syntax(ToolCallFamily::kHermes);
  std::string text =
      "<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>";
  auto one = ParseToolCalls(s, text, 42);
  auto again = ParseToolCalls(s, text, 42);
  auto other = ParseToolCalls(s, text, 43);
  ASSERT_EQ(one.calls.size(), 2u);
  for (const auto& c : one.calls) {
    ASSERT_EQ(c.id.size(), 29u);
    EXPECT_EQ(c.id.substr(0, 5), "call_");
    for (char ch : c.id.substr(5))
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch))) << c.id;
  }
  EXPECT_NE(one.calls[0].id, one.calls[1].id);
  EXPECT_EQ(one.calls[0].id, again.calls[0].id);
  EXPECT_NE(one.calls[0].id, other.calls[0].id);
  EXPECT_EQ(one.calls[1].id, MakeToolCallId(42, 1));
}

TEST(ToolCalls, FormatThenParseRoundTrips) {
  std::vector<ParsedToolCall> calls = {
      {"get_current_weather", R"({"location":"Zürich","n":[1,2]})", ""}, {"get_time", "{}", ""}};
  const std::map<ToolCallFamily, std::string> expected = {
      {ToolCallFamily::kLlama3Json,
       R"({"name": "get_current_weather", "parameters": {"location": "Zürich", "n": [1, 2]}};)"
       R"({"name": "get_time", "parameters": {}})"},
      {ToolCallFamily::kHermes,
       "<tool_call>\n{\"name\": \"get_current_weather\", \"arguments\": {\"location\": "
       "\"Zürich\", \"n\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
       "\"arguments\": {}}\n</tool_call>"},
      {ToolCallFamily::kMistral, R"([TOOL_CALLS] [{"name": "get_current_weather", )"
                                 R"("arguments": {"location": "Zürich", "n": [1, 2]}}, )"
                                 R"({"name": "get_time", "arguments": {}}])"},
      {ToolCallFamily::kPhi4Mini, R"(<|tool_call|>[{"name": "get_current_weather", )"
                                  R"("arguments": {"location": "Zürich", "n": [1, 2]}}, )"
                                  R"({"name": "get_time", "arguments": {}}]<|/tool_call|>)"},
  };
  for (const auto& [family, text] : expected) {
    auto s = Syntax(family);
    EXPECT_EQ(FormatToolCalls(s, calls), text);
    auto out = ParseToolCalls(s, text, 7);
    EXPECT_EQ(out.content, "");
    ASSERT_EQ(out.calls.size(), 2u) << text;
    EXPECT_EQ(out.calls[0].arguments_json, calls[0].arguments_json);
    EXPECT_EQ(out.calls[1].name, "get_time");
  }
  EXPECT_THROW(FormatToolCalls(Syntax(ToolCallFamily::kNone), calls), Error);
  EXPECT_THROW(FormatToolCalls(Syntax(ToolCallFamily::kHermes), {{"a", "[1]", ""}}), Error);
}

// --- Streaming ---

// Feeds `pieces` and checks the stream's total against ParseToolCalls of the whole text.
void ExpectStreamMatches(const ToolCallSyntax& s, const std::vector<std::string_view>& pieces,
                         const ParsedOutput& whole, const std::string& label) {
  ToolCallStreamParser p(s, 9);
  std::string content;
  std::string all;
  for (auto piece : pieces) all += piece;
  for (auto piece : pieces) {
    content += p.Feed(piece);
    // Forwarded text ends at a character boundary of the (valid UTF-8) output.
    ASSERT_TRUE(content.size() == all.size() ||
                (static_cast<unsigned char>(all[content.size()]) & 0xC0) != 0x80)
        << label;
  }
  ParsedOutput rest = p.Finish();
  content += rest.content;
  ASSERT_EQ(content, whole.content) << label;
  ASSERT_EQ(rest.calls, whole.calls) << label;
}

TEST(ToolCalls, StreamingMatchesWholeParseAtEverySplit) {
  const std::vector<std::pair<ToolCallFamily, std::string>> samples = {
      {ToolCallFamily::kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"city\": \"Zürich\"}}\n"
       "</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\nDone."},
      {ToolCallFamily::kHermes, "Grüße — ok\n<tool_call>{\"name\": \"a\"}</tool_call> €"},
      {ToolCallFamily::kHermes, "No calls here <tool_ just text\n  with <tool_call trailing  \n"},
      {ToolCallFamily::kHermes, "Bad <tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }}"},
      {ToolCallFamily::kLlama3Json,
       "  {\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}"},
      {ToolCallFamily::kLlama3Json, "{\"nam\": 1} then <|python_tag|>{\"name\": \"t\"}"},
      {ToolCallFamily::kLlama3Json, "{\"name\": \"John\", \"age\": 3}"},
      {ToolCallFamily::kMistral,
       "Sure [TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"l\": [1, 2]}}, {\"name\": \"b\", "
       "\"arguments\": {}}]"},
      {ToolCallFamily::kPhi4Mini,
       "Hi<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"x\": \"<|/tool_call|>\"}}]"
       "<|/tool_call|>"},
      {ToolCallFamily::kNone, "plain <tool_call> text"},
  };
  for (const auto& [family, text] : samples) {
    auto s = Syntax(family);
    ParsedOutput whole = ParseToolCalls(s, text, 9);
    std::string_view t = text;
    // Two pieces at every byte position, three pieces at every pair, and one byte at a time.
    for (size_t i = 0; i <= t.size(); ++i) {
      ExpectStreamMatches(s, {t.substr(0, i), t.substr(i)}, whole, text + " @" + std::to_string(i));
      for (size_t j = i; j <= t.size(); j += 3) {
        ExpectStreamMatches(s, {t.substr(0, i), t.substr(i, j - i), t.substr(j)}, whole,
                            text + " @" + std::to_string(i) + "," + std::to_string(j));
      }
    }
    std::vector<std::string_view> bytes;
    for (size_t i = 0; i < t.size(); ++i) bytes.push_back(t.substr(i, 1));
    ExpectStreamMatches(s, bytes, whole, text + " bytewise");
  }
}

TEST(ToolCalls, StreamingForwardsContentAsSoonAsItIsSafe) {
  ToolCallStreamParser p(Syntax(ToolCallFamily::kHermes));
  EXPECT_EQ(p.Feed("Let me "), "Let me");  // trailing space held
  EXPECT_EQ(p.Feed("check.\n<tool"), " check.");
  EXPECT_FALSE(p.in_tool_call());
  EXPECT_EQ(p.Feed("_call>\n{\"name\": "), "");
  EXPECT_TRUE(p.in_tool_call());
  EXPECT_EQ(p.Feed("\"a\"}\n</tool_call>"), "");
  ParsedOutput rest = p.Finish();
  EXPECT_EQ(rest.content, "");
  EXPECT_EQ(Calls(rest), (CallList{{"a", "{}"}}));
  EXPECT_THROW(p.Finish(), Error);
  EXPECT_THROW(p.Feed("x"), Error);

  // A held prefix of the trigger is released once it diverges.
  ToolCallStreamParser q(Syntax(ToolCallFamily::kHermes));
  EXPECT_EQ(q.Feed("a <tool"), "a");
  EXPECT_EQ(q.Feed("s!"), " <tools!");
  EXPECT_EQ(q.Finish().content, "");

  // A character split between pieces is forwarded whole.
  ToolCallStreamParser u(Syntax(ToolCallFamily::kHermes));
  EXPECT_EQ(u.Feed("Z\xC3"), "Z");
  EXPECT_EQ(u.Feed("\xBCrich \xE2\x82"), "\xC3\xBCrich ");
  EXPECT_EQ(u.Feed("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(u.Finish().content, "");

  // Llama 3: a leading object is held only while it can still be {"name"...
  ToolCallStreamParser l(Syntax(ToolCallFamily::kLlama3Json));
  EXPECT_EQ(l.Feed(" {\"na"), "");
  EXPECT_EQ(l.Feed("x\": 1}"), " {\"nax\": 1}");
  EXPECT_EQ(l.Feed(" {\"name\": 2}"), " {\"name\": 2}");  // not at the start: prose
  EXPECT_EQ(l.Finish().content, "");
}

// --- Grammar schema ---

Json WeatherTools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_current_weather",
      "description": "Weather", "parameters": {"type": "object",
      "properties": {"location": {"type": "string"}}, "required": ["location"]}}},
    {"type": "function", "function": {"name": "get_time"}}])");
}

TEST(ToolCalls, JsonSchemaOfTheCallPart) {
  Json tools = WeatherTools();
  Json one = Json::parse(
      ToolCallJsonSchema(Syntax(ToolCallFamily::kLlama3Json), tools, false, "get_time"));
  EXPECT_EQ(one, Json::parse(R"({"type": "object", "properties": {"name": {"const": "get_time"},
      "parameters": {"type": "object"}}, "required": ["name", "parameters"],
      "additionalProperties": false})"));

  Json any = Json::parse(ToolCallJsonSchema(Syntax(ToolCallFamily::kHermes), tools, true));
  ASSERT_EQ(any["anyOf"].size(), 2u);
  EXPECT_EQ(any["anyOf"][0]["properties"]["arguments"]["required"], Json::array({"location"}));

  Json array = Json::parse(ToolCallJsonSchema(Syntax(ToolCallFamily::kMistral), tools, false));
  EXPECT_EQ(array["type"], "array");
  EXPECT_EQ(array["minItems"], 1);
  EXPECT_EQ(array["maxItems"], 1);
  EXPECT_EQ(array["items"]["anyOf"].size(), 2u);
  Json parallel = Json::parse(ToolCallJsonSchema(Syntax(ToolCallFamily::kPhi4Mini), tools, true));
  EXPECT_FALSE(parallel.contains("maxItems"));

  EXPECT_THROW(ToolCallJsonSchema(Syntax(ToolCallFamily::kNone), tools, true), Error);
  EXPECT_THROW(ToolCallJsonSchema(Syntax(ToolCallFamily::kHermes), Json::array(), true), Error);
  EXPECT_THROW(ToolCallJsonSchema(Syntax(ToolCallFamily::kHermes), tools, true, "nope"), Error);
  EXPECT_THROW(
      ToolCallJsonSchema(Syntax(ToolCallFamily::kHermes), Json::parse(R"([{"x": 1}])"), true),
      Error);
}

// --- Rendering history through the real templates ---

struct TemplateCase {
  std::string file;
  Json special;  // bos_token / eos_token
};

const std::vector<TemplateCase>& ToolTemplates() {
  static const std::vector<TemplateCase> cases = {
      {"meta-llama-Llama-3.1-8B-Instruct.jinja",
       {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}}},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja",
       {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}}},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", {{"eos_token", "<|im_end|>"}}},
      {"mistralai-Mistral-7B-Instruct-v0.3.jinja", {{"bos_token", "<s>"}, {"eos_token", "</s>"}}},
      {"microsoft-Phi-4-mini-instruct.jinja",
       {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}}},
  };
  return cases;
}

std::string Render(const std::string& source, const ToolTemplateInput& in, Json extra) {
  if (extra.is_null()) extra = Json::object();
  ChatTemplateOptions options;
  options.clock = FixedNow;
  for (const auto& [k, v] : in.extra_context.items()) extra[k] = v;
  return ChatTemplate::Parse(source, "t", options)
      ->RenderJson(in.messages.dump(), true, extra.dump());
}

// An OpenAI conversation: arguments as strings, OpenAI-style ids, content null beside calls.
Json Conversation(int calls) {
  Json tool_calls = Json::array();
  Json results = Json::array();
  for (int i = 0; i < calls; ++i) {
    std::string id = "call_" + std::to_string(i) + "Xy9AbCdEfGhIjKlMnOpQrStU";
    std::string city = i == 0 ? "Paris, France" : "Zürich";
    tool_calls.push_back(
        {{"id", id},
         {"type", "function"},
         {"function",
          {{"name", "get_current_weather"}, {"arguments", Json{{"location", city}}.dump()}}}});
    results.push_back({{"role", "tool"},
                       {"tool_call_id", id},
                       {"content", "{\"temperature\": " + std::to_string(20 + i) + ".5}"}});
  }
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  messages.push_back({{"role", "user"}, {"content", "What's the weather?"}});
  messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}});
  for (auto& r : results) messages.push_back(r);
  return messages;
}

TEST(ToolCalls, RendersToolCallsAndResultsThroughEachToolTemplate) {
  for (const auto& tc : ToolTemplates()) {
    std::string source = TemplateSource(tc.file);
    ToolCallSyntax s = DetectToolCallSyntax(source);
    ASSERT_NE(s.family, ToolCallFamily::kNone) << tc.file;
    for (int calls : {1, 2}) {
      SCOPED_TRACE(tc.file + " calls=" + std::to_string(calls));
      ToolTemplateInput in = PrepareToolTemplateInput(s, Conversation(calls), WeatherTools());
      std::string prompt;
      ASSERT_NO_THROW(prompt = Render(source, in, tc.special));
      EXPECT_NE(prompt.find("get_current_weather"), std::string::npos) << prompt;
      EXPECT_NE(prompt.find("get_time"), std::string::npos) << prompt;  // the tools list
      EXPECT_NE(prompt.find("Paris, France"), std::string::npos) << prompt;
      EXPECT_NE(prompt.find("20.5"), std::string::npos) << prompt;  // the tool result
      if (calls == 2) {
        EXPECT_NE(prompt.find("Zürich"), std::string::npos) << prompt;
        EXPECT_NE(prompt.find("21.5"), std::string::npos) << prompt;
      }
      // The call is rendered as the model writes it, so its own syntax reads it back.
      if (s.family != ToolCallFamily::kMistral) {  // Mistral's template adds the id
        std::vector<ParsedToolCall> expected_calls = {
            {"get_current_weather", R"({"location":"Paris, France"})", ""}};
        if (calls == 2 && s.shape == ToolCallShape::kArray) {
          expected_calls.push_back({"get_current_weather", R"({"location":"Zürich"})", ""});
        }
        std::string call = FormatToolCalls(s, expected_calls);
        EXPECT_NE(prompt.find(call), std::string::npos) << call << "\n---\n" << prompt;
      }
    }
  }
}

TEST(ToolCalls, MistralIdsBecomeNineAlphanumericsConsistently) {
  std::string source = TemplateSource("mistralai-Mistral-7B-Instruct-v0.3.jinja");
  ToolCallSyntax s = DetectToolCallSyntax(source);
  Json messages = Conversation(2);
  // The second result has no tool_call_id: it answers the next unanswered call.
  messages[4].erase("tool_call_id");
  ToolTemplateInput in = PrepareToolTemplateInput(s, messages, WeatherTools());
  std::string id0 = MistralToolCallId("call_0Xy9AbCdEfGhIjKlMnOpQrStU");
  std::string id1 = MistralToolCallId("call_1Xy9AbCdEfGhIjKlMnOpQrStU");
  EXPECT_EQ(id0.size(), 9u);
  EXPECT_NE(id0, id1);
  EXPECT_EQ(MistralToolCallId("abc123DEF"), "abc123DEF");
  std::string prompt = Render(source, in, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  EXPECT_NE(prompt.find("\"id\": \"" + id0 + "\""), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("\"call_id\": \"" + id0 + "\""), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("\"call_id\": \"" + id1 + "\""), std::string::npos) << prompt;
  // The template writes the system prompt only into the last message when that is the user's:
  // a conversation that ends with tool results renders without it.
  EXPECT_EQ(prompt.find("You are a helpful assistant."), std::string::npos) << prompt;
}

TEST(ToolCalls, PhiFourMiniGetsToolsInTheSystemMessageAndCallsInContent) {
  ToolCallSyntax s = Syntax(ToolCallFamily::kPhi4Mini);
  Json messages = Conversation(1);
  messages.erase(0);  // no system message: one is added for the tools
  ToolTemplateInput in = PrepareToolTemplateInput(s, messages, WeatherTools());
  EXPECT_TRUE(in.extra_context.empty());
  ASSERT_EQ(in.messages[0]["role"], "system");
  EXPECT_EQ(in.messages[0]["content"], "");
  EXPECT_EQ(in.messages[0]["tools"].get<std::string>().rfind(
                "[{\"name\": \"get_current_weather\", \"description\"", 0),
            0u);
  EXPECT_FALSE(in.messages[2].contains("tool_calls"));
  EXPECT_EQ(in.messages[2]["content"],
            "<|tool_call|>[{\"name\": \"get_current_weather\", \"arguments\": {\"location\": "
            "\"Paris, France\"}}]<|/tool_call|>");
  std::string prompt = Render(TemplateSource("microsoft-Phi-4-mini-instruct.jinja"), in, {});
  EXPECT_EQ(prompt.rfind("<|system|><|tool|>[{\"name\": \"get_current_weather\"", 0), 0u);
  EXPECT_NE(prompt.find("<|tool|>{\"temperature\": 20.5}<|end|><|assistant|>"), std::string::npos)
      << prompt;
}

// The reference renders in data/expected were made with arguments as objects; OpenAI clients send
// strings. Prepared from the OpenAI form, the render must be the reference byte for byte.
TEST(ToolCalls, PreparedOpenAiHistoryRendersLikeTheReference) {
  const Json cases = Json::parse(ReadText(TemplateDataDir() / "cases.json"))["cases"];
  Json weather_tool;
  int checked = 0;
  for (const auto& c : cases) {
    std::string name = c["name"].get<std::string>();
    if (name == "mistral03_tools") weather_tool = c["context"]["tools"][0];
    if (name != "llama31_tools" && name != "llama31_tools_in_system" && name != "llama32_tools" &&
        name != "qwen25_tools" && name != "qwen25_tools_no_system" && name != "mistral03_tools") {
      continue;
    }
    SCOPED_TRACE(name);
    std::string source = TemplateSource(c["template"].get<std::string>());
    Json ctx = c["context"];
    Json messages = ctx["messages"];
    for (auto& m : messages) {
      if (!m.contains("tool_calls")) continue;
      for (auto& tc : m["tool_calls"]) {
        tc["function"]["arguments"] = tc["function"]["arguments"].dump();
      }
    }
    Json extra = Json::object();
    for (const auto& [k, v] : ctx.items()) {
      if (k != "messages" && k != "add_generation_prompt" && k != "tools") extra[k] = v;
    }
    ToolTemplateInput in =
        PrepareToolTemplateInput(DetectToolCallSyntax(source), messages, ctx["tools"]);
    EXPECT_EQ(Render(source, in, extra),
              ReadText(TemplateDataDir() / "expected" / (name + ".txt")));
    ++checked;
  }
  EXPECT_EQ(checked, 6);

  // phi4mini_tools passes the tools in the system message by hand; PrepareToolTemplateInput
  // builds the same field from OpenAI's tools list.
  ASSERT_TRUE(weather_tool.is_object());
  Json messages =
      Json::array({Json{{"role", "system"}, {"content", "You are a helpful assistant."}},
                   Json{{"role", "user"}, {"content", "What's the weather in Paris?"}}});
  ToolTemplateInput in = PrepareToolTemplateInput(Syntax(ToolCallFamily::kPhi4Mini), messages,
                                                  Json::array({weather_tool}));
  EXPECT_EQ(Render(TemplateSource("microsoft-Phi-4-mini-instruct.jinja"), in,
                   {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}}),
            ReadText(TemplateDataDir() / "expected" / "phi4mini_tools.txt"));
}

TEST(ToolCalls, PrepareRefusesWhatItCannotRender) {
  auto hermes = Syntax(ToolCallFamily::kHermes);
  auto none = Syntax(ToolCallFamily::kNone);
  auto error_of = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  };
  Json bad = Conversation(1);
  bad[2]["tool_calls"][0]["function"]["arguments"] = "{\"location\": ";
  EXPECT_EQ(error_of([&] { PrepareToolTemplateInput(hermes, bad, nullptr); }),
            "messages[2].tool_calls[0].function.arguments must be a JSON object (or a string "
            "holding one)");
  EXPECT_NE(error_of([&] {
              PrepareToolTemplateInput(none, Json::array(), WeatherTools());
            }).find("does not support tool calls"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              PrepareToolTemplateInput(none, Conversation(1), nullptr);
            }).find("messages[2]"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { PrepareToolTemplateInput(hermes, Json::object(), nullptr); }).find("messages"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              PrepareToolTemplateInput(hermes, Json::array(), Json::parse(R"([{"type": "x"}])"));
            }).find("tools[0]"),
            std::string::npos);

  // Without tools, plain messages pass through unchanged for any family; null/empty tool_calls
  // are dropped (Llama's and Mistral's templates would take them for calls).
  Json plain = Json::parse(R"([{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": "yo", "tool_calls": []}])");
  ToolTemplateInput in = PrepareToolTemplateInput(none, plain, nullptr);
  EXPECT_EQ(in.messages, Json::parse(R"([{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "yo"}])"));
  EXPECT_TRUE(in.extra_context.empty());
}

}  // namespace
}  // namespace ebb::internal
