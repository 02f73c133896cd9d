// ebb/error.h — the one error type of the ebb C++ API.
//
// Contract: every fallible ebb call reports failure by throwing ebb::Error. The message
// names the problem and, where there is one, the fix (the option or input to change).
// Exceptions never cross the C ABI, Python or HTTP boundaries; those translate ErrorCode.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ebb/export.h"

namespace ebb {

enum class ErrorCode {
  InvalidArgument,     // bad input or option; fix the input
  NotFound,            // a file, model or key does not exist
  ResourceExhausted,   // a memory budget or cap would be exceeded
  FailedPrecondition,  // the object is in a state that forbids the call
  Cancelled,           // the caller cancelled the operation
  DeadlineExceeded,    // a timeout expired
  Unavailable,         // a needed resource (device, service) is not available
  Internal,            // a bug in ebb or an unexpected failure below it
};

// Stable lower_snake_case name of a code, e.g. "resource_exhausted".
EBB_API std::string_view ErrorCodeName(ErrorCode code) noexcept;
// The code of a name ErrorCodeName gives; nullopt for any other text.
EBB_API std::optional<ErrorCode> ErrorCodeFromName(std::string_view name) noexcept;

class EBB_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace ebb
