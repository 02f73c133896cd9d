// src/template/template_error.h — source positions and error helpers for the Jinja subset.
//
// Every template problem (syntax, unsupported construct, bad operand at render time,
// raise_exception) is reported as ebb::Error. Messages start with "<source>:<line>:<col>: "
// when a position is known. Codes: InvalidArgument for template/input problems,
// ResourceExhausted when a render limit (output size, steps, depth) is hit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/error.h"

namespace ebb::tmpl {

// 1-based line and column (column counts bytes) in the template source; 0 = unknown.
struct SourcePos {
  uint32_t line = 0;
  uint32_t column = 0;
};

// Formats "<name>:<line>:<col>: <message>" (or "<name>: <message>" without a position).
std::string FormatAt(std::string_view source_name, SourcePos pos, std::string_view message);

// Throws ebb::Error(InvalidArgument) with a positioned message.
[[noreturn]] void ThrowAt(std::string_view source_name, SourcePos pos, std::string_view message);

// Throws ebb::Error(ResourceExhausted) with a positioned message.
[[noreturn]] void ThrowLimit(std::string_view source_name, SourcePos pos, std::string_view message);

}  // namespace ebb::tmpl
