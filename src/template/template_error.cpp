#include "template/template_error.h"

namespace ebb::tmpl {

std::string FormatAt(std::string_view source_name, SourcePos pos, std::string_view message) {
  std::string out(source_name);
  if (pos.line != 0) {
    out += ':';
    out += std::to_string(pos.line);
    out += ':';
    out += std::to_string(pos.column);
  }
  out += ": ";
  out += message;
  return out;
}

void ThrowAt(std::string_view source_name, SourcePos pos, std::string_view message) {
  throw Error(ErrorCode::InvalidArgument, FormatAt(source_name, pos, message));
}

void ThrowLimit(std::string_view source_name, SourcePos pos, std::string_view message) {
  throw Error(ErrorCode::ResourceExhausted, FormatAt(source_name, pos, message));
}

}  // namespace ebb::tmpl
