#include "ebb/error.h"

namespace ebb {

std::string_view ErrorCodeName(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "invalid_argument";
    case ErrorCode::NotFound:
      return "not_found";
    case ErrorCode::ResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::FailedPrecondition:
      return "failed_precondition";
    case ErrorCode::Cancelled:
      return "cancelled";
    case ErrorCode::DeadlineExceeded:
      return "deadline_exceeded";
    case ErrorCode::Unavailable:
      return "unavailable";
    case ErrorCode::Internal:
      return "internal";
  }
  return "unknown";
}

std::optional<ErrorCode> ErrorCodeFromName(std::string_view name) noexcept {
  for (ErrorCode c : {ErrorCode::InvalidArgument, ErrorCode::NotFound, ErrorCode::ResourceExhausted,
                      ErrorCode::FailedPrecondition, ErrorCode::Cancelled,
                      ErrorCode::DeadlineExceeded, ErrorCode::Unavailable, ErrorCode::Internal}) {
    if (ErrorCodeName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace ebb
