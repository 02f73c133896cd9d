// constrain/gbnf.h — llama.cpp's GBNF grammar format to a Grammar.
//
// Why GBNF rather than Lark (onnxruntime-genai's format through llguidance): GBNF is the format
// local-LLM users already hold grammars in (llama.cpp's grammars/ folder, Ollama's forks), it is
// a plain BNF over characters that maps one-to-one onto ebb's grammar, and it needs no lexer;
// Lark has a separate terminal layer with regex priorities and Earley/LALR choices.
//
// Syntax (llama.cpp grammars/README.md): `name ::= alternatives` rules, `|`, grouping with
// parentheses, string literals "..." with escapes (\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH),
// character classes [a-z] and [^...], `.` (any character), the quantifiers * + ? {m} {m,}
// {m,n}, and # comments. Rules may be defined in any order; `root` is the start rule.
// Errors throw ebb::Error(InvalidArgument) "grammar: line L, column C: ..." (an undefined rule
// names itself; a missing root says to add `root ::= ...`).
#pragma once

#include <string_view>

#include "constrain/grammar.h"

namespace ebb::constrain {

Grammar ParseGbnf(std::string_view text);

}  // namespace ebb::constrain
