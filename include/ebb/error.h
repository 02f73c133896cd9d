// ebb/error.h — the one error type of the ebb C++ API.
//
// Contract: every fallible ebb call reports failure by throwing ebb::Error. The message
// names the problem and, where there is one, the fix (the option or input to change).
// Exceptions never cross the C ABI, Python or HTTP boundaries; those translate ErrorCode.
//
// Three deliberate exceptions, each because the call's work is already done or is best-effort
// and throwing would lose it:
// - Generation::Next (and so Generate) does not throw for a decoding error once tokens were
//   produced: the rows end with FinishReason::kError, the text so far is kept, and
//   GenerateResult::error holds the ebb::Error. Errors before the first token still throw.
// - ModelControls::ReleaseWeights returns a WeightsRelease whose `reason` says why nothing was
//   released (anonymous weights, requests running): declining is an answer, not a failure.
// - ModelControls::ShrinkArena logs an error of its minimal step rather than throwing: the KV
//   pool and the heap are trimmed anyway, and the caller (often a timer) has nothing to undo.
// Anything else that does not throw on failure is a bug.
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
