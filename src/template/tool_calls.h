// src/template/tool_calls.h — the tool-call syntax of each model family: which one a chat
// template uses, how to read calls out of the model's output (whole or streamed), what the
// constrained decoder must generate once a call starts, and how to turn OpenAI tool-call history
// into the message form the family's template reads.
//
// Output grammar of a tool-call turn, as each family was trained to write it:
//
//   output  := content [section]           content: free text, possibly empty
//   section := block (block_separator block)*      further blocks only when repeat_blocks
//   block   := [optional_opening] opening after_opening JSON before_end end
//   JSON    := call                                 shape kObject
//            | "[" call ("," call)* "]"             shape kArray (parallel calls in one block)
//   call    := {"name": <tool name>, <arguments_key>: <arguments object>}
//
//   family       trigger                opening          JSON    end
//   kLlama3Json  {"name" (start only)   ""               object  ""
//                <|python_tag|>         (optional_opening: <|python_tag|>)
//   kHermes      <tool_call>            <tool_call>      object  </tool_call>
//   kMistral     [TOOL_CALLS]           [TOOL_CALLS]     array   ""
//   kPhi4Mini    <|tool_call|>          <|tool_call|>    array   <|/tool_call|>
//
// For example (FormatToolCalls writes these):
//   Llama 3   {"name": "f", "parameters": {"x": 1}}
//   Hermes    <tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>
//   Mistral   [TOOL_CALLS] [{"name": "f", "arguments": {"x": 1}}, {"name": "g", ...}]
//   Phi-4-m   <|tool_call|>[{"name": "f", "arguments": {"x": 1}}]<|/tool_call|>
//
// Lazy grammar: generation is free until a trigger appears; from the trigger's first byte the
// output must match `section` (every trigger is a prefix of a block: its bytes belong to the
// section), after which the model ends its turn with its end-of-turn token. Llama 3's bare-JSON
// trigger counts only at the start of the output (see trigger_at_start_only).
//
// Markers such as [TOOL_CALLS], <|python_tag|> and <|tool_call|> are special tokens in their
// vocabularies: the text given to the parsers must be decoded with special tokens kept, or the
// calls are not recognised (they are then returned as content, never guessed).
//
// Errors: ebb::Error(InvalidArgument) for bad input to the functions that say so. Parsing model
// output never throws for what the model wrote: what is not a well-formed call stays content.
//
// Thread-safety: free functions are pure; a ToolCallStreamParser is one stream's state (one
// thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::internal {

enum class ToolCallFamily {
  kNone,        // the template renders no tools, or in a syntax not known here
  kLlama3Json,  // Llama 3.1/3.2/3.3 custom tools: {"name": .., "parameters": {..}}
  kHermes,      // Qwen2.5, Hermes 2 Pro/3: <tool_call>\n{"name": .., "arguments": ..}\n</tool_call>
  kMistral,     // Mistral v3 tokenizer (7B v0.3, Large 2407): [TOOL_CALLS] [{..}, ..]
  kPhi4Mini,    // Phi-4-mini: <|tool_call|>[{..}]<|/tool_call|>
};

// Stable lower_snake_case name: "none", "llama3_json", "hermes", "mistral", "phi4_mini".
std::string_view ToolCallFamilyName(ToolCallFamily family);

enum class ToolCallShape {
  kObject,  // a block's JSON is one call object
  kArray,   // a block's JSON is an array of call objects
};

// What the decoder needs to build the lazy grammar of a family (see the grammar above), and what
// the parsers follow. Literal fields hold the exact text the model writes; where whitespace is
// concerned, they hold the model's own (canonical) spacing, and parsing accepts any JSON
// whitespace (space, tab, CR, LF) there instead.
struct ToolCallSyntax {
  ToolCallFamily family = ToolCallFamily::kNone;
  // The text that starts a block in the output. Empty for kNone.
  std::string trigger;
  // Further texts that also start a block (Llama 3: "<|python_tag|>"). They count anywhere.
  std::vector<std::string> extra_triggers;
  // Whether `trigger` counts only at the start of the output (after leading whitespace) or right
  // after a previous block (after whitespace or ';'): Llama 3's trigger is the start of a bare
  // JSON object, and {"name" in the middle of prose is not a call.
  bool trigger_at_start_only = false;
  // Literal that begins a block, before its JSON. Empty when the JSON itself begins the block.
  std::string opening;
  // Literal that may come before `opening` (Llama 3: "<|python_tag|>").
  std::string optional_opening;
  // Whitespace the model writes between opening and JSON (Hermes "\n", Mistral " ") and between
  // JSON and end (Hermes "\n").
  std::string after_opening;
  std::string before_end;
  ToolCallShape shape = ToolCallShape::kObject;
  // Key of a call's arguments object: "arguments", or "parameters" for Llama 3. Parsing accepts
  // either key in every family.
  std::string arguments_key;
  // Literal that closes a block; empty when the JSON ends it. Parsing tolerates a missing end
  // when nothing but whitespace follows the JSON (the model stopped before writing it).
  std::string end;
  // Whether parallel calls are written as further blocks (Hermes) rather than as further array
  // elements, and the text between two blocks. Llama 3 has no parallel form in its template;
  // outputs that chain calls separate them with ';', which is what block_separator says there.
  bool repeat_blocks = false;
  std::string block_separator;
  // Whether the template renders several calls in one assistant message. Llama 3's raises
  // ("only supports single tool-calls"): the grammar should allow one call, and
  // PrepareToolTemplateInput splits such history messages into one message per call.
  bool parallel_calls = false;

  // `trigger` followed by `extra_triggers`; empty for kNone.
  std::vector<std::string> triggers() const;
};

// The syntax of a family (kNone: the empty syntax).
ToolCallSyntax ToolCallSyntaxFor(ToolCallFamily family);

// Recognises the family from the template text by the markers it writes: [TOOL_CALLS] (Mistral),
// <|tool_call|> or <|tool|> (Phi-4-mini), <tool_call> (Hermes/Qwen; checked before Llama so that
// Hermes fine-tunes of Llama 3 are Hermes), <|python_tag|> or a Llama 3 header template that
// writes "parameters" for tools (Llama 3). kNone otherwise.
ToolCallSyntax DetectToolCallSyntax(std::string_view template_source);

struct ParsedToolCall {
  std::string name;
  std::string arguments_json;  // compact JSON object text, e.g. {"city":"Paris"}
  std::string id;              // "call_" + 24 alphanumerics (MakeToolCallId)
  bool operator==(const ParsedToolCall&) const = default;
};

struct ParsedOutput {
  // Text outside tool calls. With no calls: the output, unchanged. With calls: the text before
  // the first block with its trailing whitespace removed, then the text after the last block with
  // its leading whitespace removed, joined by "\n" when both are non-empty.
  std::string content;
  std::vector<ParsedToolCall> calls;
};

// The id of the index-th call of an output: "call_" + 24 characters of [0-9A-Za-z], a pure
// function of (seed, index). Pass a per-response seed so that responses get distinct ids.
std::string MakeToolCallId(uint64_t seed, size_t index);

// Extracts the calls from a model's complete output. The section starts at the first trigger;
// blocks follow one another separated by whitespace (or ';'). A call is an object with a
// non-empty string "name" and an "arguments" or "parameters" object (a string holding a JSON
// object is also read; a missing one is {} except for Llama 3's bare JSON, where it is required
// so that ordinary JSON with a "name" is not taken for a call). If anything from the first
// trigger on is not well formed (bad JSON, a bad call object, a wrong marker), the whole text
// is content and there are no calls: calls are never guessed. Ids are MakeToolCallId(id_seed, i).
ParsedOutput ParseToolCalls(const ToolCallSyntax& syntax, std::string_view text,
                            uint64_t id_seed = 0);

// The calls as the family's model writes them (one block per call, joined by block_separator,
// for kObject; one block for kArray), in Python json.dumps spacing. Throws InvalidArgument for
// kNone, an empty list, or arguments_json that is not a JSON object.
std::string FormatToolCalls(const ToolCallSyntax& syntax, const std::vector<ParsedToolCall>& calls);

// JSON Schema (text) of the JSON part of a block, for the grammar: one call object (kObject) or
// an array of them (kArray; minItems 1, and maxItems 1 unless `parallel`). A call is
// {"name": {"const": <tool>}, <arguments_key>: <the tool's parameters schema>}, both required,
// no other properties, "name" listed first (so compact JSON of it starts with {"name", which is
// Llama 3's trigger); anyOf over the tools when there are several. `tools` is OpenAI's list of
// {"type": "function", "function": {"name", "description", "parameters"}} (bare function
// objects are accepted too). `only_tool`, when not empty, keeps that tool alone (tool_choice
// naming a function). Throws InvalidArgument for kNone, a malformed or empty tools list, or an
// unknown only_tool.
std::string ToolCallJsonSchema(const ToolCallSyntax& syntax, const nlohmann::ordered_json& tools,
                               bool parallel, std::string_view only_tool = {});

// Incremental ParseToolCalls for streamed output. Feed returns the content that is safe to
// forward now; text that may start a block (a trigger, or a trailing prefix of one) and trailing
// whitespace are held. Once a trigger has appeared, everything after it is held until Finish,
// which returns the rest: the content not yet forwarded and the calls. Contract: the
// concatenation of Feed's results and Finish().content equals ParseToolCalls(syntax, all text,
// id_seed).content, and Finish().calls equals its calls, however the text is split.
class ToolCallStreamParser {
 public:
  explicit ToolCallStreamParser(ToolCallSyntax syntax, uint64_t id_seed = 0);

  // Appends `piece` (any split, even inside a UTF-8 character or a marker) and returns the
  // content to forward now (possibly empty), which never ends inside a UTF-8 character of
  // valid input. Throws FailedPrecondition after Finish.
  std::string Feed(std::string_view piece);
  // Whether a trigger has appeared: the rest of the output is held for Finish.
  bool in_tool_call() const { return block_started_; }
  // Ends the stream (call once). Throws FailedPrecondition when called again.
  ParsedOutput Finish();

 private:
  ToolCallSyntax syntax_;
  uint64_t id_seed_;
  std::string text_;      // everything fed so far
  size_t forwarded_ = 0;  // bytes of text_ returned by Feed
  bool block_started_ = false;
  bool finished_ = false;
};

// Messages and template variables for ChatTemplate::RenderJson(messages.dump(), ...,
// extra_context.dump()) (merge extra_context into any other variables you pass).
struct ToolTemplateInput {
  nlohmann::ordered_json messages;
  nlohmann::ordered_json extra_context;  // a JSON object; {"tools": [...]} where the template
                                         // reads the variable, else {}
};

// Rewrites OpenAI chat messages (with assistant tool_calls and role "tool" results) and the
// request's `tools` (an array, or null/empty for none) into what `syntax`'s template reads:
//  - all families: tool_calls[i].function.arguments given as a string (OpenAI) is parsed into an
//    object (the templates apply tojson or items() to it); a null or empty tool_calls is removed;
//    a tool message's null content or list of text parts becomes text (other content, such as
//    an object, is left to the template).
//  - kLlama3Json: an assistant message with N > 1 calls becomes N messages of one call each.
//  - kMistral: ids (tool_calls[i].id, tool_call_id) become the 9 alphanumerics the template
//    requires (MistralToolCallId); a missing tool_call_id takes the id of the next unanswered
//    call of the preceding assistant message.
//  - kPhi4Mini: the template reads no `tools` variable and renders no tool_calls: the tools go
//    into the system message's "tools" field (a JSON text of the function objects, json.dumps
//    style; a system message with empty content is added when there is none), and each
//    assistant message's calls are appended to its content as FormatToolCalls writes them.
//    Tool results keep role "tool" (the template renders them as <|tool|>result<|end|>).
// Throws InvalidArgument (naming the field, e.g. "messages[2].tool_calls[0].function.arguments
// ...") for malformed messages or tools, and for tools or tool messages with kNone.
ToolTemplateInput PrepareToolTemplateInput(const ToolCallSyntax& syntax,
                                           const nlohmann::ordered_json& messages,
                                           const nlohmann::ordered_json& tools);

// A tool-call id as Mistral's template requires it: `id` itself when it is 9 ASCII
// alphanumerics, else 9 alphanumerics derived from it by hash (the same id always maps to the
// same result, so a call and its tool result still match).
std::string MistralToolCallId(std::string_view id);

}  // namespace ebb::internal
