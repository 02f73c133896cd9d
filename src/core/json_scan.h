// One linear walk over the structure of JSON text, without parsing it: what the checks that must
// run before a parser (nesting depth, members per object) and the scanners that find where an
// embedded JSON value ends share. Strings are skipped (their brackets and commas are text).
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstddef>
#include <string_view>

namespace ebb::internal {

// Calls visit(i, c) for each '{', '[', '}', ']' and ',' of `text` outside strings, from `pos`
// on, until visit returns false. Returns the index where it stopped, or text.size() at the end.
// Malformed JSON is walked all the same (the parser reports it).
template <typename Visit>
size_t ScanJsonStructure(std::string_view text, size_t pos, Visit&& visit) {
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[' || c == '}' || c == ']' || c == ',') {
      if (!visit(i, c)) return i;
    }
  }
  return text.size();
}

}  // namespace ebb::internal
