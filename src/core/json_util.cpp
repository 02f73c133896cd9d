#include "core/json_util.h"

#include "core/json_scan.h"

namespace ebb::internal {

void CheckJsonDepth(std::string_view text, std::string_view source) {
  int depth = 0;
  ScanJsonStructure(text, 0, [&](size_t i, char c) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw Error(ErrorCode::InvalidArgument, std::string(source) + ": JSON nested deeper than " +
                                                    std::to_string(kMaxJsonDepth) +
                                                    " levels (at byte " + std::to_string(i) +
                                                    "); ebb refuses such documents");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
    return true;
  });
}

}  // namespace ebb::internal
