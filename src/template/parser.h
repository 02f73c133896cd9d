// src/template/parser.h — builds the AST of a Jinja-subset template from its tokens.
//
// Grammar and operator precedence follow Jinja2 (see docs/chat_templates.md for the subset).
// Anything outside the subset (include, extends, call blocks, unknown filters or tests, ...)
// is rejected here, at parse time, with "<source>:<line>:<col>: unsupported ...".
// Nesting is limited (kMaxNesting) so hostile input cannot overflow the stack.
//
// Stateless; Parse is thread-safe. Throws ebb::Error(InvalidArgument).
#pragma once

#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace ebb::tmpl {

// Limits on nesting: blocks plus bracket/call/filter nesting, and the height of one expression.
inline constexpr int kMaxNesting = 64;
inline constexpr int kMaxExprDepth = 128;

// Parses a whole template.
Body Parse(std::vector<Token> tokens, std::string_view source_name);

}  // namespace ebb::tmpl
