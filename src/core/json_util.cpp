#include "core/json_util.h"

namespace ebb::internal {

void CheckJsonDepth(std::string_view text, std::string_view source) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw Error(ErrorCode::InvalidArgument, std::string(source) + ": JSON nested deeper than " +
                                                    std::to_string(kMaxJsonDepth) +
                                                    " levels (at byte " + std::to_string(i) +
                                                    "); ebb refuses such documents");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace ebb::internal
