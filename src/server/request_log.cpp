#include "server/request_log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>

#include "core/log_format.h"

namespace ebb::server {
namespace {

using Clock = std::chrono::steady_clock;

struct Record {
  Clock::time_point start = Clock::now();
  std::string model;
  std::optional<uint64_t> prompt_tokens;
  std::optional<uint64_t> generated_tokens;
  std::optional<double> ttft_ms;
  std::string outcome;
  int stream_error_status = 0;
  std::string stream_error_code;
};

Record& This() {
  thread_local Record record;
  return record;
}

}  // namespace

std::string NextRequestId() {
  static std::atomic<uint64_t> next{1};
  return "req-" + std::to_string(next++);
}

std::string RequestIdFor(std::string_view client_id, bool* replaced) {
  const bool ok = !client_id.empty() && client_id.size() <= kMaxRequestIdBytes &&
                  std::all_of(client_id.begin(), client_id.end(),
                              [](char c) { return c >= 0x21 && c <= 0x7e; });
  if (replaced != nullptr) *replaced = !ok && !client_id.empty();
  return ok ? std::string(client_id) : NextRequestId();
}

void BeginRequest() { This() = Record{}; }

void NoteGeneration(const std::string& model, const GenerateResult& result) {
  Record& r = This();
  r.model = model;
  r.prompt_tokens = result.usage.prompt_tokens;
  r.generated_tokens = result.usage.completion_tokens;
  if (result.usage.completion_tokens > 0) r.ttft_ms = result.stats.ttft_ms;
  if (result.error) {
    r.outcome = "error";
  } else if (!result.rows.empty()) {
    r.outcome = std::string(FinishReasonName(result.rows[0].finish_reason));
  }
}

void NoteOutcome(std::string_view outcome) { This().outcome = std::string(outcome); }

void NoteStreamError(int status, std::string_view code) {
  Record& r = This();
  r.outcome = "error";
  r.stream_error_status = status;
  r.stream_error_code = std::string(code);
}

int StreamErrorStatus() { return This().stream_error_status; }

bool ReachedModel() { return !This().model.empty(); }

void NoteEmbedding(const std::string& model, uint64_t prompt_tokens) {
  Record& r = This();
  r.model = model;
  r.prompt_tokens = prompt_tokens;
}

std::string RequestLine(std::string_view id, std::string_view method, std::string_view route,
                        int status, std::string_view remote) {
  const Record& r = This();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - r.start).count();
  internal::LogLine line("request");
  line.Add("id", id).Add("method", method).Add("route", route).Add("status", status);
  if (!r.model.empty()) line.Add("model", r.model);
  line.Add("outcome", !r.outcome.empty() ? r.outcome : (status < 400 ? "ok" : "error"));
  if (r.stream_error_status != 0) {
    line.Add("error_status", r.stream_error_status);
    if (!r.stream_error_code.empty()) line.Add("error_code", r.stream_error_code);
  }
  if (r.prompt_tokens) line.Add("prompt_tokens", *r.prompt_tokens);
  if (r.generated_tokens) line.Add("generated_tokens", *r.generated_tokens);
  if (r.ttft_ms) line.Add("ttft_ms", *r.ttft_ms);
  line.Add("duration_ms", ms).Add("remote", remote);
  return line.str();
}

}  // namespace ebb::server
