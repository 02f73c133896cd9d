// The one info line `ebb serve` logs per HTTP request (docs/http_api.md#requests-and-logs), e.g.
//   request id=req-7 method=POST route=/v1/chat/completions status=200 model=demo outcome=stop
//           prompt_tokens=12 generated_tokens=16 ttft_ms=4.1 duration_ms=38.0 remote=127.0.0.1
// (one line; logfmt in the text format, a JSON object with --log-format json).
//
// cpp-httplib runs a request's pre-routing handler, its route handler (and a streamed
// response's content provider) and the access logger one after another on one thread, so the
// figures travel in a thread-local record: BeginRequest() in pre-routing resets it and stamps
// the start, the handlers Note*() what they know, and RequestLine() reads it in the logger.
// Fields a request does not have (a GET has no model or tokens) are left out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/generation.h"

namespace ebb::server {

// Request ids (docs/http_api.md#requests-and-logs). A client's X-Request-Id is echoed only
// when it is 1 to kMaxRequestIdBytes printable ASCII characters (0x21 to 0x7e): anything else
// could split the response header or the log line.
inline constexpr size_t kMaxRequestIdBytes = 128;
// A fresh "req-N" (one counter for the process).
std::string NextRequestId();
// The id a response carries: `client_id` when it qualifies, else NextRequestId(), with
// `*replaced` set when a non-empty client id was dropped.
std::string RequestIdFor(std::string_view client_id, bool* replaced);

void BeginRequest();
// A generation: its model, token counts, TTFT and finish reason ("stop", "length",
// "cancelled", "error").
void NoteGeneration(const std::string& model, const GenerateResult& result);
void NoteOutcome(std::string_view outcome);  // e.g. "cancelled" when the client went away
// A streamed response that ended with an error event after its 200 head was sent: the status
// and code that error would have had (logged as error_status/error_code; outcome "error").
void NoteStreamError(int status, std::string_view code);
// The status NoteStreamError recorded for this request, or 0.
int StreamErrorStatus();
// An embedding request: its model and prompt tokens.
void NoteEmbedding(const std::string& model, uint64_t prompt_tokens);
// Whether this request reached a model (NoteGeneration or NoteEmbedding was called): a failed
// request that did not was refused before it (a bad field, the queue, the KV budget).
bool ReachedModel();

// The line for the request that just ended, with its duration since BeginRequest(); outcome
// defaults to "ok" below status 400, "error" otherwise.
std::string RequestLine(std::string_view id, std::string_view method, std::string_view route,
                        int status, std::string_view remote);

}  // namespace ebb::server
