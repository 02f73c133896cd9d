// The service's errors in OpenAI's shape: {"error": {"message", "type", "param", "code",
// "ebb_code"}} with a fitting HTTP status. "ebb_code" is the ebb::ErrorCode name
// ("resource_exhausted"): the CLI client and ebb.connect map an error by it, so every surface
// raises the code the in-process call would (one table, ErrorCodeOfStatus, for the rest). Every
// failure a route meets becomes one of these; nothing leaves the service as a bare 500.
#pragma once

#include <exception>
#include <optional>
#include <string>

#include "ebb/error.h"

namespace ebb::server {

struct ApiError {
  int status = 500;
  std::string type;     // OpenAI's type: "invalid_request_error", "not_found_error", ...
  std::string message;  // names the problem and the fix
  std::optional<std::string> param;  // the request field at fault
  std::optional<std::string> code;   // a stable code: "model_not_found", "context_length_exceeded"
  int retry_after_s = 0;             // > 0: sent as Retry-After
  // The ebb::ErrorCode this error is; when unset, ErrorCodeOfStatus(status).
  std::optional<ErrorCode> ebb_code;

  ErrorCode EbbCode() const;
  std::string ToJson() const;
};

// Thrown by routes for failures that are not ebb::Error (a bad field, a full queue).
struct ApiException : std::exception {
  explicit ApiException(ApiError e) : error(std::move(e)) {}
  const char* what() const noexcept override { return error.message.c_str(); }
  ApiError error;
};

// 400 invalid_request_error naming `param`.
[[noreturn]] void ThrowBadField(const std::string& param, const std::string& message,
                                const std::string& code = "invalid_value",
                                ErrorCode ebb_code = ErrorCode::InvalidArgument);

// The one status -> code table, for errors that carry no ebb_code (a route's own 4xx, or a
// server older than ebb_code): 400/413/415/431 invalid_argument, 401/403/409 failed_precondition,
// 404 not_found, 408/504 deadline_exceeded, 429/507 resource_exhausted, 499 cancelled,
// 503 unavailable, anything else internal.
ErrorCode ErrorCodeOfStatus(int status);

// The status and shape of an ebb::Error: InvalidArgument 400, NotFound 404, ResourceExhausted
// 507 (memory budget), FailedPrecondition 409, Cancelled 499, DeadlineExceeded 504, Unavailable
// 503, Internal 500 (with its message).
ApiError FromError(const Error& e);
// Any exception in flight (call inside a catch block).
ApiError FromCurrentException();
// An ebb::Error met finding or acquiring the request's model: FromError with param "model",
// and code model_not_found for NotFound.
ApiError ModelError(const Error& e);

}  // namespace ebb::server
