// src/template/lexer.h — splits a Jinja template into text and tag tokens.
//
// Implements Jinja2's lexing rules with trim_blocks=True and lstrip_blocks=True (the settings
// Hugging Face transformers renders chat templates with): "{%-"/"-%}" style whitespace control,
// "{%+"/"+%}" opt-outs, comments, {% raw %} blocks, newline normalization to "\n" and removal
// of one trailing newline (keep_trailing_newline=False).
//
// Stateless; Tokenize is thread-safe. Throws ebb::Error(InvalidArgument) with line:column on
// malformed input (unterminated tags, comments or strings, unexpected characters).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "template/template_error.h"

namespace ebb::tmpl {

enum class TokenKind : uint8_t {
  kText,        // literal output (already whitespace-processed)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal (value decoded)
  kInt,
  kFloat,
  kOperator,  // punctuation / operator, text holds it
  kEnd,       // end of template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // text, name, decoded string, operator
  int64_t int_value = 0;
  double float_value = 0;
  SourcePos pos;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

std::vector<Token> Tokenize(std::string_view source, std::string_view source_name,
                            const LexerOptions& options = {});

}  // namespace ebb::tmpl
