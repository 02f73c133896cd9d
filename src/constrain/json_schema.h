// constrain/json_schema.h — JSON Schema (draft 7 and OpenAI's structured outputs) to a Grammar
// whose language is the compact JSON text of the instances the schema accepts.
//
// The text is compact (no whitespace between tokens) and canonical for the schema: an object's
// properties come in the order its `properties` lists them, then any additional properties;
// strings are written as JSON.stringify writes them (only ", \ and control characters escaped;
// \b \f \n \r \t, else \u00xx); numbers as JSON numbers (an integral value has no fraction or
// exponent in canonical form; the grammar also accepts fractions and exponents for `number`).
// docs/structured_output.md lists the keywords supported, and how the text is made canonical.
//
// A keyword that cannot be honoured is never ignored: it throws ebb::Error(InvalidArgument)
// "json_schema: keyword 'oneOf' at /properties/a is not supported (...)" naming the keyword and
// the JSON pointer of the schema object holding it. Annotations (title, description, default,
// examples, $comment, $schema, readOnly, writeOnly, deprecated) do not constrain and are accepted.
#pragma once

#include <string_view>

#include "constrain/grammar.h"

namespace ebb::constrain {

struct JsonSchemaOptions {
  // Nesting of anonymous JSON values (for {} and additionalProperties: true) kept finite so
  // generation cannot loop; deeper values are refused by the grammar.
  int max_any_depth = 8;
};

// `schema` is the schema's JSON text. Throws ebb::Error(InvalidArgument) for invalid JSON, an
// unsupported keyword, a bad value of a supported keyword, or an unresolvable $ref.
Grammar CompileJsonSchema(std::string_view schema, const JsonSchemaOptions& options = {});

// The grammar of any JSON object ({"type": "json_object"} in OpenAI's response_format).
Grammar AnyJsonObjectGrammar(const JsonSchemaOptions& options = {});

}  // namespace ebb::constrain
