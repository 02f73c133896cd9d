// ebb/observer.h's one function. The observer types are a vocabulary of the base band: model/
// and generate/ report to observers that runtime/ registers (tools/check_layers.py).
#include "ebb/observer.h"

namespace ebb {

std::string_view RequestOutcomeName(RequestOutcome outcome) {
  switch (outcome) {
    case RequestOutcome::kCompleted:
      return "completed";
    case RequestOutcome::kCancelled:
      return "cancelled";
    case RequestOutcome::kError:
      return "error";
  }
  return "?";
}

}  // namespace ebb
