#include "server/tool_calling.h"

#include <algorithm>

#include "server/api_error.h"

namespace ebb::server {

using OJson = nlohmann::ordered_json;

namespace {

// OpenAI's tool_calls list from parsed calls.
nlohmann::json CallsJson(const std::vector<internal::ParsedToolCall>& calls, bool with_index) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    nlohmann::json c = {
        {"id", calls[i].id},
        {"type", "function"},
        {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments_json}}}};
    if (with_index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

bool IsEos(int32_t id, const std::vector<int32_t>& eos) {
  return std::find(eos.begin(), eos.end(), id) != eos.end();
}

}  // namespace

bool UsesTools(const CompletionRequest& r) {
  return r.chat && (!r.tools_json.empty() || r.tool_history);
}

ToolPlan PrepareTools(const CompletionRequest& r, const Model& model, GenerateRequest& g) {
  ToolPlan plan;
  plan.syntax = internal::DetectToolCallSyntax(model.chat_template().source());
  if (plan.syntax.family == internal::ToolCallFamily::kNone) {
    ThrowBadField(r.tools_json.empty() ? "messages" : "tools",
                  "model '" + r.model +
                      "' has a chat template that renders no tools (ebb recognises the tool-call "
                      "syntax of Llama 3.x, Qwen 2.5/Hermes, Mistral and Phi-4-mini templates; "
                      "docs/structured_output.md): give it such a template, or leave out tools",
                  "unsupported_value");
  }
  const OJson tools = r.tools_json.empty() ? OJson() : OJson::parse(r.tools_json);
  internal::ToolTemplateInput in;
  try {
    in = internal::PrepareToolTemplateInput(plan.syntax, OJson::parse(r.messages_json), tools);
  } catch (const Error& e) {
    ThrowBadField("messages", e.what());
  }
  std::string text;
  try {
    text = model.chat_template().RenderJson(in.messages.dump(), true, in.extra_context.dump());
  } catch (const Error& e) {
    ThrowBadField("messages", std::string("the chat template failed to render: ") + e.what());
  }
  g.input_ids = {model.tokenizer()->Encode(text, false)};
  plan.parse = !r.tools_json.empty() && r.tool_choice != "none";
  if (!plan.parse) return plan;
  const internal::ToolCallSyntax& s = plan.syntax;
  try {
    g.params.json_schema =
        internal::ToolCallJsonSchema(s, tools, r.parallel_tool_calls && s.parallel_calls,
                                     r.tool_choice == "function" ? r.tool_choice_name : "");
  } catch (const Error& e) {
    ThrowBadField("tools", e.what());
  }
  g.params.constraint_prefix = s.opening + s.after_opening;
  g.params.constraint_suffix = s.before_end + s.end;
  // "auto": free text until the family's trigger; "required" or a named function: a call from
  // the first token.
  if (r.tool_choice == "auto") g.params.constraint_trigger = s.trigger;
  return plan;
}

nlohmann::json ToolMessage(const ToolPlan& plan, const Tokenizer& tok,
                           const std::vector<int32_t>& eos, const GenerateRow& row, uint64_t seed,
                           std::string& finish) {
  nlohmann::json msg = {{"role", "assistant"}, {"content", row.text}, {"refusal", nullptr}};
  if (!plan.parse) return msg;
  // Special tokens kept (the markers), the end-of-turn token dropped.
  std::vector<int32_t> ids = row.generated_ids;
  while (!ids.empty() && IsEos(ids.back(), eos)) ids.pop_back();
  std::string raw;
  try {
    raw = tok.Decode(ids, false);
  } catch (const Error&) {
    return msg;
  }
  const internal::ParsedOutput parsed = internal::ParseToolCalls(plan.syntax, raw, seed);
  if (parsed.calls.empty()) return msg;
  msg["content"] =
      parsed.content.empty() ? nlohmann::json(nullptr) : nlohmann::json(parsed.content);
  msg["tool_calls"] = CallsJson(parsed.calls, false);
  finish = "tool_calls";
  return msg;
}

ToolStream::ToolStream(const ToolPlan& plan, const Tokenizer& tok, const std::vector<int32_t>& eos,
                       uint64_t seed)
    : decoder_(tok, false), parser_(plan.syntax, seed), eos_(eos) {}

std::string ToolStream::Feed(int32_t id) {
  if (id < 0 || IsEos(id, eos_)) return "";
  return parser_.Feed(decoder_.Put(id));
}

std::pair<std::string, nlohmann::json> ToolStream::Finish() {
  std::string rest = parser_.Feed(decoder_.Flush());
  internal::ParsedOutput out = parser_.Finish();
  rest += out.content;
  return {rest, CallsJson(out.calls, true)};
}

}  // namespace ebb::server
