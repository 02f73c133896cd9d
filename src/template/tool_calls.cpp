// src/template/tool_calls.cpp — see tool_calls.h.
#include "template/tool_calls.h"

#include <algorithm>
#include <utility>

#include "core/json_scan.h"
#include "ebb/error.h"

namespace ebb::internal {
namespace {

using Json = nlohmann::ordered_json;
constexpr size_t kNpos = std::string_view::npos;
// Deeper JSON in model output is treated as malformed: nlohmann's dump() recurses.
constexpr int kMaxJsonDepth = 256;
constexpr std::string_view kAlnum =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

[[noreturn]] void Invalid(std::string message) {
  throw Error(ErrorCode::InvalidArgument, std::move(message));
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view text, size_t pos) {
  while (pos < text.size() && IsJsonSpace(text[pos])) ++pos;
  return pos;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsJsonSpace(s.front())) s.remove_prefix(1);
  return s;
}

// Compact JSON text; invalid UTF-8 (which nlohmann's parser already refuses) cannot throw here.
std::string Compact(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// json.dumps(j, ensure_ascii=ascii) as Python writes it: ", " and ": " separators. Templates and
// models use this spacing (tojson is json.dumps), so texts we render into prompts follow it.
void DumpPython(const Json& j, bool ascii, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      if (!first) out += ", ";
      first = false;
      out += Json(key).dump(-1, ' ', ascii, Json::error_handler_t::replace);
      out += ": ";
      DumpPython(value, ascii, out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out += ", ";
      DumpPython(j[i], ascii, out);
    }
    out += ']';
  } else {
    out += j.dump(-1, ' ', ascii, Json::error_handler_t::replace);
  }
}

std::string DumpPython(const Json& j, bool ascii) {
  std::string out;
  DumpPython(j, ascii, out);
  return out;
}

// One past the JSON object or array that starts at text[pos] ('{' or '['), found by nesting and
// string quoting alone (the text is validated by the JSON parser afterwards); kNpos when the text
// ends first or nesting passes kMaxJsonDepth.
size_t JsonExtent(std::string_view text, size_t pos) {
  int depth = 0;
  size_t end = kNpos;
  ScanJsonStructure(text, pos, [&](size_t i, char c) {
    if (c == '{' || c == '[') return ++depth <= kMaxJsonDepth;
    if ((c == '}' || c == ']') && --depth == 0) {
      end = i + 1;
      return false;
    }
    return true;
  });
  return end;
}

bool StartsWithAt(std::string_view text, size_t pos, std::string_view prefix) {
  return pos <= text.size() && text.substr(pos).starts_with(prefix);
}

// Triggers that count anywhere in the output.
std::vector<std::string_view> AnywhereTriggers(const ToolCallSyntax& s) {
  std::vector<std::string_view> out;
  if (!s.trigger.empty() && !s.trigger_at_start_only) out.push_back(s.trigger);
  for (const auto& t : s.extra_triggers) out.push_back(t);
  return out;
}

// Whether any trigger (the start-only one included) begins at `pos`.
bool TriggerAt(const ToolCallSyntax& s, std::string_view text, size_t pos) {
  if (!s.trigger.empty() && StartsWithAt(text, pos, s.trigger)) return true;
  for (const auto& t : s.extra_triggers) {
    if (StartsWithAt(text, pos, t)) return true;
  }
  return false;
}

struct TriggerScan {
  size_t pos = kNpos;     // where a block starts or may start
  bool complete = false;  // a whole trigger is there (else the text ends in a prefix of one)
};

// The earliest trigger at or after `from`, or, when `partial`, the earliest trailing proper
// prefix of one, whichever comes first (a complete trigger wins a tie). The start-only trigger is
// looked for at the first non-space byte of the text, when that is at or after `from`.
TriggerScan ScanTriggers(const ToolCallSyntax& s, std::string_view text, size_t from,
                         bool partial) {
  TriggerScan best;
  auto consider = [&](size_t pos, bool complete) {
    if (pos < best.pos || (pos == best.pos && complete && !best.complete)) best = {pos, complete};
  };
  auto consider_trailing_prefix = [&](std::string_view t, size_t min_pos) {
    // The longest proper prefix of t that ends the text starts earliest.
    if (t.empty()) return;
    size_t max_len = std::min(t.size() - 1, text.size() - std::min(text.size(), min_pos));
    for (size_t len = max_len; len > 0; --len) {
      if (text.substr(text.size() - len) == t.substr(0, len)) {
        consider(text.size() - len, false);
        return;
      }
    }
  };
  if (s.trigger_at_start_only && !s.trigger.empty()) {
    size_t first = SkipSpace(text, 0);
    if (first >= from && first < text.size()) {
      std::string_view rest = text.substr(first);
      if (rest.starts_with(s.trigger)) {
        consider(first, true);
      } else if (partial && std::string_view(s.trigger).starts_with(rest)) {
        consider(first, false);
      }
    }
  }
  for (std::string_view t : AnywhereTriggers(s)) {
    size_t pos = text.find(t, from);
    if (pos != kNpos) consider(pos, true);
    if (partial) consider_trailing_prefix(t, from);
  }
  return best;
}

// Reads one call object into `out`; false when it is not one (see ParseToolCalls).
bool ReadCall(const Json& j, bool require_arguments, std::vector<ParsedToolCall>& out) {
  if (!j.is_object()) return false;
  const Json* call = &j;
  // {"type": "function", "function": {...}}, as some fine-tunes echo OpenAI's form.
  if (!j.contains("name") && j.contains("function") && j["function"].is_object()) {
    call = &j["function"];
  }
  auto name = call->find("name");
  if (name == call->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return false;
  }
  auto args = call->find("arguments");
  if (args == call->end()) args = call->find("parameters");
  Json object;
  if (args == call->end() || args->is_null()) {
    if (require_arguments) return false;
    object = Json::object();
  } else if (args->is_object()) {
    object = *args;
  } else if (args->is_string()) {
    object = Json::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (object.is_discarded() || !object.is_object()) return false;
  } else {
    return false;
  }
  out.push_back({name->get<std::string>(), Compact(object), {}});
  return true;
}

// Parses the block that starts at `pos` of the complete output. Returns one past its end, or
// kNpos when it is not well formed.
size_t ParseBlock(const ToolCallSyntax& s, std::string_view text, size_t pos,
                  std::vector<ParsedToolCall>& calls) {
  size_t p = pos;
  // Llama 3's bare JSON must carry its arguments; after <|python_tag|> the call is explicit.
  bool require_arguments = s.trigger_at_start_only;
  if (!s.optional_opening.empty() && StartsWithAt(text, p, s.optional_opening)) {
    p += s.optional_opening.size();
    require_arguments = false;
  }
  if (!StartsWithAt(text, p, s.opening)) return kNpos;
  p = SkipSpace(text, p + s.opening.size());
  if (p >= text.size() || (text[p] != '{' && text[p] != '[')) return kNpos;
  size_t json_end = JsonExtent(text, p);
  if (json_end == kNpos) return kNpos;
  Json value = Json::parse(text.substr(p, json_end - p), nullptr, false);
  if (value.is_discarded()) return kNpos;
  // Either shape is read in every family: models trained on one occasionally write the other.
  if (value.is_array()) {
    if (value.empty()) return kNpos;
    for (const auto& item : value) {
      if (!ReadCall(item, require_arguments, calls)) return kNpos;
    }
  } else if (!ReadCall(value, require_arguments, calls)) {
    return kNpos;
  }
  p = json_end;
  if (!s.end.empty()) {
    size_t q = SkipSpace(text, p);
    if (StartsWithAt(text, q, s.end)) {
      p = q + s.end.size();
    } else if (q != text.size()) {
      return kNpos;  // text after the JSON that does not close the block
    }
  }
  return p;
}

// `limit`, or the start of the UTF-8 sequence that `limit` cuts short, so that forwarded text
// never ends inside a character (the triggers are ASCII, so they never cut one).
size_t Utf8Boundary(std::string_view text, size_t limit) {
  for (size_t back = 1; back <= 4 && back <= limit; ++back) {
    auto c = static_cast<unsigned char>(text[limit - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? limit - back : limit;
  }
  return limit;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// --- PrepareToolTemplateInput helpers ---

std::string FieldPath(size_t message, std::string_view rest) {
  return "messages[" + std::to_string(message) + "]" + std::string(rest);
}

// OpenAI content (string, null, or a list of parts of which "text" parts carry text) as text.
std::string ContentText(const Json& content, const std::string& path) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) {
    std::string text;
    for (const auto& part : content) {
      if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) {
        Invalid(path + " must be a string or a list of {\"type\": \"text\", \"text\": ...} parts");
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  Invalid(path + " must be a string or a list of text parts");
}

// The function objects of an OpenAI tools list (unwrapping {"type": "function", "function"}).
std::vector<Json> ToolFunctions(const Json& tools) {
  std::vector<Json> out;
  if (tools.is_null()) return out;
  if (!tools.is_array()) Invalid("tools must be a list of {\"type\": \"function\", ...} objects");
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    std::string path = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) Invalid(path + " must be an object");
    const Json* fn = &t;
    if (t.contains("function")) {
      fn = &t["function"];
      path += ".function";
    }
    if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string() ||
        (*fn)["name"].get_ref<const std::string&>().empty()) {
      Invalid(path + " must be an object with a non-empty string \"name\"");
    }
    if (fn->contains("parameters") && !(*fn)["parameters"].is_object()) {
      Invalid(path + ".parameters must be a JSON Schema object");
    }
    out.push_back(*fn);
  }
  return out;
}

// Normalises one assistant message's tool_calls in place (see PrepareToolTemplateInput); false
// when the message has none left.
bool NormalizeToolCalls(Json& msg, size_t index) {
  auto it = msg.find("tool_calls");
  if (it == msg.end()) return false;
  if (it->is_null() || (it->is_array() && it->empty())) {
    msg.erase("tool_calls");
    return false;
  }
  if (!it->is_array()) Invalid(FieldPath(index, ".tool_calls") + " must be a list");
  for (size_t j = 0; j < it->size(); ++j) {
    Json& call = (*it)[j];
    std::string path = FieldPath(index, ".tool_calls[" + std::to_string(j) + "]");
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
      Invalid(path + " must be an object with a \"function\" object");
    }
    Json& fn = call["function"];
    if (!fn.contains("name") || !fn["name"].is_string() ||
        fn["name"].get_ref<const std::string&>().empty()) {
      Invalid(path + ".function.name must be a non-empty string");
    }
    auto args = fn.find("arguments");
    if (args == fn.end() || args->is_null()) {
      fn["arguments"] = Json::object();
    } else if (args->is_string()) {
      Json parsed = Json::parse(args->get_ref<const std::string&>(), nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        Invalid(path + ".function.arguments must be a JSON object (or a string holding one)");
      }
      *args = std::move(parsed);
    } else if (!args->is_object()) {
      Invalid(path + ".function.arguments must be a JSON object (or a string holding one)");
    }
  }
  return true;
}

bool IsAlnum9(std::string_view id) {
  if (id.size() != 9) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return kAlnum.find(c) != std::string_view::npos; });
}

}  // namespace

std::string_view ToolCallFamilyName(ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::kNone:
      return "none";
    case ToolCallFamily::kLlama3Json:
      return "llama3_json";
    case ToolCallFamily::kHermes:
      return "hermes";
    case ToolCallFamily::kMistral:
      return "mistral";
    case ToolCallFamily::kPhi4Mini:
      return "phi4_mini";
  }
  return "none";
}

std::vector<std::string> ToolCallSyntax::triggers() const {
  std::vector<std::string> out;
  if (!trigger.empty()) out.push_back(trigger);
  out.insert(out.end(), extra_triggers.begin(), extra_triggers.end());
  return out;
}

ToolCallSyntax ToolCallSyntaxFor(ToolCallFamily family) {
  ToolCallSyntax s;
  s.family = family;
  switch (family) {
    case ToolCallFamily::kNone:
      break;
    case ToolCallFamily::kLlama3Json:
      // The template writes {"name": "<f>", "parameters": <tojson>}; Llama 3.1's builtin tools
      // use <|python_tag|>f.call(...) (not JSON, so not parsed), and the models also put custom
      // JSON calls after <|python_tag|>.
      s.trigger = "{\"name\"";
      s.extra_triggers = {"<|python_tag|>"};
      s.trigger_at_start_only = true;
      s.optional_opening = "<|python_tag|>";
      s.shape = ToolCallShape::kObject;
      s.arguments_key = "parameters";
      s.block_separator = ";";
      s.parallel_calls = false;
      break;
    case ToolCallFamily::kHermes:
      s.trigger = "<tool_call>";
      s.opening = "<tool_call>";
      s.after_opening = "\n";
      s.before_end = "\n";
      s.end = "</tool_call>";
      s.shape = ToolCallShape::kObject;
      s.arguments_key = "arguments";
      s.repeat_blocks = true;
      s.block_separator = "\n";
      s.parallel_calls = true;
      break;
    case ToolCallFamily::kMistral:
      s.trigger = "[TOOL_CALLS]";
      s.opening = "[TOOL_CALLS]";
      s.after_opening = " ";
      s.shape = ToolCallShape::kArray;
      s.arguments_key = "arguments";
      s.parallel_calls = true;
      break;
    case ToolCallFamily::kPhi4Mini:
      s.trigger = "<|tool_call|>";
      s.opening = "<|tool_call|>";
      s.end = "<|/tool_call|>";
      s.shape = ToolCallShape::kArray;
      s.arguments_key = "arguments";
      s.parallel_calls = true;
      break;
  }
  return s;
}

ToolCallSyntax DetectToolCallSyntax(std::string_view source) {
  auto has = [&](std::string_view marker) { return source.find(marker) != kNpos; };
  if (has("[TOOL_CALLS]")) return ToolCallSyntaxFor(ToolCallFamily::kMistral);
  // Phi-4-mini's own template never writes <|tool_call|>: it renders the system message's
  // "tools" field between <|tool|> and <|/tool|>.
  if (has("<|tool_call|>") || (has("<|tool|>") && has("tools"))) {
    return ToolCallSyntaxFor(ToolCallFamily::kPhi4Mini);
  }
  if (has("<tool_call>")) return ToolCallSyntaxFor(ToolCallFamily::kHermes);
  if (has("<|python_tag|>") ||
      (has("<|start_header_id|>") && has("\"parameters\"") && has("tools"))) {
    return ToolCallSyntaxFor(ToolCallFamily::kLlama3Json);
  }
  return ToolCallSyntaxFor(ToolCallFamily::kNone);
}

std::string MakeToolCallId(uint64_t seed, size_t index) {
  uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (static_cast<uint64_t>(index) + 1));
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[SplitMix64(state) % kAlnum.size()];
  return id;
}

ParsedOutput ParseToolCalls(const ToolCallSyntax& syntax, std::string_view text, uint64_t id_seed) {
  ParsedOutput out;
  TriggerScan first = syntax.family == ToolCallFamily::kNone
                          ? TriggerScan{}
                          : ScanTriggers(syntax, text, 0, /*partial=*/false);
  if (first.pos == kNpos) {
    out.content = text;
    return out;
  }
  std::vector<ParsedToolCall> calls;
  size_t pos = first.pos;
  while (true) {
    size_t next = ParseBlock(syntax, text, pos, calls);
    if (next == kNpos) {
      out.content = text;  // not well formed: all of it is content, no calls
      return out;
    }
    pos = next;
    size_t q = pos;
    while (q < text.size() && (IsJsonSpace(text[q]) || text[q] == ';')) ++q;
    if (q >= text.size() || !TriggerAt(syntax, text, q)) break;
    pos = q;
  }
  std::string_view before = TrimRight(text.substr(0, first.pos));
  std::string_view after = TrimLeft(text.substr(pos));
  out.content = before;
  if (!after.empty()) {
    if (!out.content.empty()) out.content += '\n';
    out.content += after;
  }
  for (size_t i = 0; i < calls.size(); ++i) calls[i].id = MakeToolCallId(id_seed, i);
  out.calls = std::move(calls);
  return out;
}

std::string FormatToolCalls(const ToolCallSyntax& s, const std::vector<ParsedToolCall>& calls) {
  if (s.family == ToolCallFamily::kNone) Invalid("FormatToolCalls: the family has no tool calls");
  if (calls.empty()) Invalid("FormatToolCalls: no calls");
  std::vector<std::string> texts;
  for (const auto& c : calls) {
    Json args = Json::parse(c.arguments_json, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
      Invalid("tool call '" + c.name + "': arguments_json must be a JSON object");
    }
    texts.push_back("{\"name\": " + DumpPython(Json(c.name), false) + ", \"" + s.arguments_key +
                    "\": " + DumpPython(args, false) + "}");
  }
  auto block = [&](const std::string& json) {
    return s.opening + s.after_opening + json + s.before_end + s.end;
  };
  std::string out;
  if (s.shape == ToolCallShape::kArray) {
    std::string json = "[";
    for (size_t i = 0; i < texts.size(); ++i) json += (i > 0 ? ", " : "") + texts[i];
    return block(json + "]");
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) out += s.block_separator;
    out += block(texts[i]);
  }
  return out;
}

std::string ToolCallJsonSchema(const ToolCallSyntax& s, const Json& tools, bool parallel,
                               std::string_view only_tool) {
  if (s.family == ToolCallFamily::kNone) {
    Invalid("the model's chat template does not support tool calls");
  }
  std::vector<Json> fns = ToolFunctions(tools);
  Json alternatives = Json::array();
  for (const auto& fn : fns) {
    const std::string& name = fn["name"].get_ref<const std::string&>();
    if (!only_tool.empty() && name != only_tool) continue;
    Json call = {{"type", "object"},
                 {"properties",
                  {{"name", {{"const", name}}},
                   {s.arguments_key, fn.value("parameters", Json{{"type", "object"}})}}},
                 {"required", Json::array({"name", s.arguments_key})},
                 {"additionalProperties", false}};
    alternatives.push_back(std::move(call));
  }
  if (alternatives.empty()) {
    if (!only_tool.empty())
      Invalid("tool_choice names '" + std::string(only_tool) + "', which is not in tools");
    Invalid("tools must not be empty");
  }
  Json call = alternatives.size() == 1 ? alternatives[0] : Json{{"anyOf", alternatives}};
  if (s.shape == ToolCallShape::kObject) return Compact(call);
  Json array = {{"type", "array"}, {"items", call}, {"minItems", 1}};
  if (!parallel) array["maxItems"] = 1;
  return Compact(array);
}

ToolCallStreamParser::ToolCallStreamParser(ToolCallSyntax syntax, uint64_t id_seed)
    : syntax_(std::move(syntax)), id_seed_(id_seed) {}

std::string ToolCallStreamParser::Feed(std::string_view piece) {
  if (finished_)
    throw Error(ErrorCode::FailedPrecondition, "ToolCallStreamParser: fed after Finish");
  text_ += piece;
  if (block_started_) return {};
  size_t limit = text_.size();
  if (syntax_.family != ToolCallFamily::kNone) {
    TriggerScan scan = ScanTriggers(syntax_, text_, forwarded_, /*partial=*/true);
    if (scan.pos != kNpos) {
      limit = scan.pos;
      block_started_ = scan.complete;
    }
    // Trailing whitespace is held: ParseToolCalls drops the whitespace before a block.
    while (limit > forwarded_ && IsJsonSpace(text_[limit - 1])) --limit;
  }
  limit = std::max(forwarded_, Utf8Boundary(text_, limit));
  std::string out = text_.substr(forwarded_, limit - forwarded_);
  forwarded_ = limit;
  return out;
}

ParsedOutput ToolCallStreamParser::Finish() {
  if (finished_) throw Error(ErrorCode::FailedPrecondition, "ToolCallStreamParser: Finish twice");
  finished_ = true;
  ParsedOutput out = ParseToolCalls(syntax_, text_, id_seed_);
  // What Feed returned is a prefix of the content (it stops before the first trigger and before
  // whitespace, which ParseToolCalls keeps when there are no calls and trims only at a block).
  if (out.content.compare(0, forwarded_, text_, 0, forwarded_) != 0) {
    throw Error(ErrorCode::Internal, "ToolCallStreamParser: forwarded text is not content");
  }
  out.content.erase(0, forwarded_);
  return out;
}

std::string MistralToolCallId(std::string_view id) {
  if (IsAlnum9(id)) return std::string(id);
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 0x100000001B3ull;
  std::string out;
  for (int i = 0; i < 9; ++i) {
    out += kAlnum[h % kAlnum.size()];
    h /= kAlnum.size();
  }
  return out;
}

ToolTemplateInput PrepareToolTemplateInput(const ToolCallSyntax& syntax, const Json& messages,
                                           const Json& tools) {
  if (!messages.is_array()) Invalid("messages must be a list of message objects");
  std::vector<Json> fns = ToolFunctions(tools);
  bool none = syntax.family == ToolCallFamily::kNone;
  if (none && !fns.empty()) {
    Invalid("tools: the model's chat template does not support tool calls");
  }

  ToolTemplateInput in;
  in.messages = Json::array();
  in.extra_context = Json::object();
  std::vector<std::string> pending_ids;  // Mistral: unanswered call ids, in order
  size_t pending_next = 0;

  for (size_t i = 0; i < messages.size(); ++i) {
    Json msg = messages[i];
    if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string()) {
      Invalid(FieldPath(i, "") + " must be an object with a string \"role\"");
    }
    const std::string role = msg["role"].get<std::string>();
    bool has_calls = role == "assistant" && NormalizeToolCalls(msg, i);
    if (none && (has_calls || role == "tool")) {
      Invalid(FieldPath(i, "") +
              ": the model's chat template does not support tool calls or tool results");
    }

    if (role == "tool") {
      // Text parts become text; other content (an object: Llama's template renders it with
      // tojson) is left to the template.
      Json& content = msg["content"];
      bool text_parts =
          content.is_array() && std::all_of(content.begin(), content.end(), [](const Json& part) {
            return part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                   part["text"].is_string();
          });
      if (content.is_null() || text_parts) content = ContentText(content, FieldPath(i, ".content"));
      if (syntax.family == ToolCallFamily::kMistral) {
        auto id = msg.find("tool_call_id");
        if (id != msg.end() && !id->is_null()) {
          if (!id->is_string()) Invalid(FieldPath(i, ".tool_call_id") + " must be a string");
          *id = MistralToolCallId(id->get_ref<const std::string&>());
        } else if (pending_next < pending_ids.size()) {
          msg["tool_call_id"] = pending_ids[pending_next];
        } else {
          Invalid(FieldPath(i, ".tool_call_id") + " is missing and no tool call is unanswered");
        }
        ++pending_next;
      }
      in.messages.push_back(std::move(msg));
      continue;
    }
    if (!has_calls) {
      in.messages.push_back(std::move(msg));
      continue;
    }

    Json& calls = msg["tool_calls"];
    switch (syntax.family) {
      case ToolCallFamily::kLlama3Json:
        if (calls.size() > 1) {
          for (size_t j = 0; j < calls.size(); ++j) {
            Json one = msg;
            one["tool_calls"] = Json::array({calls[j]});
            if (j > 0) one.erase("content");
            in.messages.push_back(std::move(one));
          }
          continue;
        }
        break;
      case ToolCallFamily::kMistral:
        pending_ids.clear();
        pending_next = 0;
        for (size_t j = 0; j < calls.size(); ++j) {
          auto id = calls[j].find("id");
          std::string mapped;
          if (id != calls[j].end() && id->is_string()) {
            mapped = MistralToolCallId(id->get_ref<const std::string&>());
          } else {
            mapped = MistralToolCallId("ebb:" + std::to_string(i) + ":" + std::to_string(j));
          }
          calls[j]["id"] = mapped;
          pending_ids.push_back(mapped);
        }
        break;
      case ToolCallFamily::kPhi4Mini: {
        std::vector<ParsedToolCall> parsed;
        for (const auto& c : calls) {
          parsed.push_back(
              {c["function"]["name"].get<std::string>(), Compact(c["function"]["arguments"]), ""});
        }
        std::string content = ContentText(msg.value("content", Json()), FieldPath(i, ".content"));
        msg["content"] = content + FormatToolCalls(syntax, parsed);
        msg.erase("tool_calls");
        break;
      }
      default:
        break;
    }
    in.messages.push_back(std::move(msg));
  }

  if (fns.empty()) return in;
  if (syntax.family == ToolCallFamily::kPhi4Mini) {
    Json list = Json::array();
    for (auto& fn : fns) list.push_back(std::move(fn));
    // json.dumps defaults (ensure_ascii), as Phi-4-mini's examples write the tools field.
    std::string text = DumpPython(list, /*ascii=*/true);
    if (in.messages.empty() || in.messages[0].value("role", "") != "system") {
      in.messages.insert(in.messages.begin(), Json{{"role", "system"}, {"content", ""}});
    }
    Json& system = in.messages[0];
    system["content"] = ContentText(system.value("content", Json()), FieldPath(0, ".content"));
    system["tools"] = text;
  } else {
    // Templates that read the variable index tool.function (Mistral): wrap bare functions.
    Json list = Json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      list.push_back(tools[i].contains("function")
                         ? tools[i]
                         : Json{{"type", "function"}, {"function", std::move(fns[i])}});
    }
    in.extra_context["tools"] = std::move(list);
  }
  return in;
}

}  // namespace ebb::internal
