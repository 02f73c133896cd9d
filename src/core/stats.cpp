// The names of ebb/stats.h's enums: the text every surface and JSON form uses.
#include "ebb/stats.h"

namespace ebb {

std::string_view WeightsStateName(WeightsState state) noexcept {
  switch (state) {
    case WeightsState::kAnonymous:
      return "anonymous";
    case WeightsState::kFileBacked:
      return "file-backed";
    case WeightsState::kReleased:
      return "released";
    case WeightsState::kBroken:
      return "broken";
    case WeightsState::kMixed:
      return "mixed";
  }
  return "unknown";
}

}  // namespace ebb
