// constrain/regex.h — regular expressions to grammar rules (the `regex` constraint, and JSON
// Schema's `pattern` and `format`).
//
// The dialect is the common subset of ECMAScript (JSON Schema's) and PCRE: literals and escapes
// (\d \w \s \D \W \S, \t \n \r \f \v \0, \xHH, \uHHHH, \u{H...}, escaped metacharacters), `.`
// (any character except \n and \r), character classes with ranges and negation, groups (...)
// and (?:...), alternation, the quantifiers * + ? {n} {n,} {n,m} (their lazy forms match the
// same strings; possessive ones do not, and are refused), and ^ / $ at the start and end of the
// pattern or of a top-level alternative. Characters are Unicode code points, matched as UTF-8.
// Anything else (backreferences, lookaround, \b, named groups, flags, a ^ or $ in the middle)
// throws ebb::Error(InvalidArgument) naming the construct and its byte offset.
#pragma once

#include <cstdint>
#include <string_view>

#include "constrain/grammar.h"

namespace ebb::constrain {

struct RegexOptions {
  // false: the whole text must match (the `regex` constraint: ^ and $ are implied).
  // true: JSON Schema's `pattern` semantics, a search: the text must contain a match, so a side
  // without ^ (or $) may have anything before (or after) the match.
  bool search = false;
  // true: the rule matches the characters as they appear inside a JSON string literal (between
  // the quotes), so `"` and `\` are written \" and \\, control characters as \b \f \n \r \t or
  // \u00XX (lower-case hex; the canonical JSON.stringify forms), and nothing else is escaped.
  bool json_string_body = false;
  // Prefix of error messages ("regex", "json_schema: /properties/id/pattern", ...).
  std::string_view source = "regex";
};

// Adds rules for `pattern` to `grammar` and returns the rule matching it. Throws
// ebb::Error(InvalidArgument) "<source>: <what> at offset N is not supported ..." or
// "... is not a valid regular expression: ...".
int32_t CompileRegex(Grammar& grammar, std::string_view pattern, const RegexOptions& options);

}  // namespace ebb::constrain
