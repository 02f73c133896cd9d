// Parsing the JSON documents ebb reads (genai_config.json, tokenizer.json,
// tokenizer_config.json, messages files, …) with one nesting limit.
//
// nlohmann's parser is iterative, but dump(), comparisons and ebb's own walks over a document
// (tokenizer components, template values) recurse: a document nested 100,000 deep overflowed the
// stack. Every document is checked for depth before it is parsed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ebb/error.h"

namespace ebb::internal {

// Deeper than any real config, tokenizer or message list; shallow enough for every recursive
// walk over a document to stay far from the stack limit.
constexpr int kMaxJsonDepth = 256;

// Throws ebb::Error(InvalidArgument) "<source>: JSON nested deeper than 256 levels (at byte N)"
// when arrays/objects in `text` nest deeper than kMaxJsonDepth. Linear, no recursion; ignores
// brackets inside strings. Malformed JSON otherwise passes (the parser reports it).
void CheckJsonDepth(std::string_view text, std::string_view source);

// CheckJsonDepth, then parse; a parse error becomes ebb::Error(InvalidArgument)
// "<source> is not valid JSON: …".
template <typename Json = nlohmann::json>
Json ParseJsonDocument(std::string_view text, std::string_view source) {
  CheckJsonDepth(text, source);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(source) + " is not valid JSON: " + e.what());
  }
}

}  // namespace ebb::internal
