// Tool calling on /v1/chat/completions (docs/structured_output.md "Tool calls"): the model
// family's syntax from its chat template (template/tool_calls.h), the prompt rendered with the
// tools and the tool-call history, a constraint that makes the calls the model writes valid
// (lazy under tool_choice "auto", from the first token under "required" or a named function),
// and the calls read back out of the output, whole or streamed.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ebb/generation.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"
#include "server/openai_request.h"
#include "template/tool_calls.h"

namespace ebb::server {

// How a chat request with tools (or tool history) runs. `parse`: the output is read for calls.
struct ToolPlan {
  internal::ToolCallSyntax syntax;
  bool parse = false;
};

// Whether the request needs the tool path: tools given, or tool messages in the history.
bool UsesTools(const CompletionRequest& r);

// Renders the prompt (g.input_ids) with the tools and history, and sets the tool-call
// constraint on g.params. Throws ApiException 400 naming the field: a template that renders no
// tools, malformed tool history.
ToolPlan PrepareTools(const CompletionRequest& r, const Model& model, GenerateRequest& g);

// The assistant message of a finished row: {"role", "content", "tool_calls"?}; `finish` becomes
// "tool_calls" when the model called one. `seed` makes the call ids.
nlohmann::json ToolMessage(const ToolPlan& plan, const Tokenizer& tok,
                           const std::vector<int32_t>& eos, const GenerateRow& row, uint64_t seed,
                           std::string& finish);

// A streamed reply: the tokens in, the content to forward out; at the end, the calls as
// OpenAI's delta.tool_calls entries.
class ToolStream {
 public:
  ToolStream(const ToolPlan& plan, const Tokenizer& tok, const std::vector<int32_t>& eos,
             uint64_t seed);
  // Content to send now (possibly empty) after token `id`.
  std::string Feed(int32_t id);
  // The rest of the content, and the calls ([{index, id, type, function{name, arguments}}]).
  std::pair<std::string, nlohmann::json> Finish();

 private:
  StreamDecoder decoder_;  // special tokens kept: markers such as [TOOL_CALLS] are special
  internal::ToolCallStreamParser parser_;
  std::vector<int32_t> eos_;
};

}  // namespace ebb::server
