// libFuzzer target: parses arbitrary template source and renders it with a fixed conversation
// (including tools), under small limits. Any ebb::Error is an expected outcome; crashes, hangs,
// sanitizer reports or other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ebb/chat_template.h"
#include "ebb/error.h"

namespace {

constexpr std::string_view kMessages = R"([
  {"role": "system", "content": "You are helpful."},
  {"role": "user", "content": "Hi \u00e9 \"there\"\n"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "abc123DEF", "type": "function",
    "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, true, null]}}}]},
  {"role": "tool", "tool_call_id": "abc123DEF", "content": "{\"ok\": true}"},
  {"role": "user", "content": [{"type": "text", "text": "part"}]}
])";
constexpr std::string_view kExtra = R"({"tools": [{"type": "function", "function": {"name": "f",
  "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
  "bos_token": "<s>", "eos_token": "</s>"})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  ebb::ChatTemplateOptions options;
  options.max_output_bytes = 64 * 1024;
  options.max_steps = 20000;
  options.max_items = 10000;
  options.max_call_depth = 8;
  options.clock = [] { return std::chrono::system_clock::time_point{}; };
  try {
    auto t = ebb::ChatTemplate::Parse(source, "fuzz", options);
    (void)t->RenderJson(kMessages, true, kExtra);
    (void)t->Render({{"user", "x"}}, false);
  } catch (const ebb::Error&) {
  }
  return 0;
}
