#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace ebb::server {

ErrorCode ErrorCodeOfStatus(int status) {
  switch (status) {
    case 400:
    case 413:
    case 415:
    case 431:
      return ErrorCode::InvalidArgument;
    case 401:
    case 403:
    case 409:
      return ErrorCode::FailedPrecondition;
    case 404:
      return ErrorCode::NotFound;
    case 408:
    case 504:
      return ErrorCode::DeadlineExceeded;
    case 429:
    case 507:
      return ErrorCode::ResourceExhausted;
    case 499:
      return ErrorCode::Cancelled;
    case 503:
      return ErrorCode::Unavailable;
    default:
      return ErrorCode::Internal;
  }
}

ErrorCode ApiError::EbbCode() const { return ebb_code.value_or(ErrorCodeOfStatus(status)); }

std::string ApiError::ToJson() const {
  nlohmann::ordered_json j;
  j["error"] = {{"message", message},
                {"type", type},
                {"param", param ? nlohmann::ordered_json(*param) : nlohmann::ordered_json()},
                {"code", code ? nlohmann::ordered_json(*code) : nlohmann::ordered_json()},
                {"ebb_code", std::string(ErrorCodeName(EbbCode()))}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ThrowBadField(const std::string& param, const std::string& message, const std::string& code,
                   ErrorCode ebb_code) {
  throw ApiException(ApiError{400, "invalid_request_error", message, param, code, 0, ebb_code});
}

namespace {

// The status and shape for an ebb::Error's code.
ApiError FromErrorCode(const Error& e) {
  switch (e.code()) {
    case ErrorCode::InvalidArgument:
      return {400, "invalid_request_error", e.what(), std::nullopt, "invalid_argument", 0};
    case ErrorCode::NotFound:
      return {404, "not_found_error", e.what(), std::nullopt, "not_found", 0};
    case ErrorCode::ResourceExhausted:
      return {507,          "insufficient_memory_error", e.what(),
              std::nullopt, "memory_budget_exceeded",    5};
    case ErrorCode::FailedPrecondition:
      return {409, "conflict_error", e.what(), std::nullopt, "failed_precondition", 0};
    case ErrorCode::Cancelled:
      return {499, "cancelled_error", e.what(), std::nullopt, "cancelled", 0};
    case ErrorCode::DeadlineExceeded:
      return {504, "timeout_error", e.what(), std::nullopt, "deadline_exceeded", 0};
    case ErrorCode::Unavailable:
      return {503, "unavailable_error", e.what(), std::nullopt, "unavailable", 5};
    case ErrorCode::Internal:
      break;
  }
  return {500,          "server_error", std::string("internal error: ") + e.what(),
          std::nullopt, "internal",     0};
}

}  // namespace

ApiError FromError(const Error& e) {
  ApiError a = FromErrorCode(e);
  a.ebb_code = e.code();
  return a;
}

ApiError FromCurrentException() {
  try {
    throw;
  } catch (const ApiException& e) {
    return e.error;
  } catch (const Error& e) {
    return FromError(e);
  } catch (const nlohmann::json::exception& e) {
    return {400,          "invalid_request_error", std::string("bad JSON value: ") + e.what(),
            std::nullopt, "invalid_json",          0};
  } catch (const std::bad_alloc&) {
    return {507,
            "insufficient_memory_error",
            "the service ran out of memory serving this request; retry with a smaller request",
            std::nullopt,
            "out_of_memory",
            5};
  } catch (const std::exception& e) {
    return {500,          "server_error", std::string("internal error: ") + e.what(),
            std::nullopt, "internal",     0};
  } catch (...) {
    return {500, "server_error", "internal error: unknown exception", std::nullopt, "internal", 0};
  }
}

ApiError ModelError(const Error& e) {
  ApiError a = FromError(e);
  a.param = "model";
  if (e.code() == ErrorCode::NotFound) a.code = "model_not_found";
  return a;
}

}  // namespace ebb::server
