// ebb/observer.h — request observers: how metrics, logs and services watch every request of a
// runtime without touching the generator.
//
// A request is one generation (a generator from its first AppendTokens until done(), or until
// it is destroyed) or one embedding call. The runtime calls every observer on the thread that
// runs the request, so an observer must be quick and thread-safe; an exception it throws is
// logged and swallowed (a request never fails because of an observer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/export.h"

namespace ebb {

enum class RequestOutcome {
  kCompleted,  // the request ran to its end (EOS, max_length, or a stop sequence)
  kCancelled,  // the caller cancelled it, or destroyed the generator before the end
  kError,      // a step failed (e.g. a budget refused the KV cache); the error was reported
};

EBB_API std::string_view RequestOutcomeName(RequestOutcome outcome);  // "completed", ...

struct RequestStart {
  std::string model_id;
  uint64_t request_id = 0;  // unique within the process
};

struct RequestEnd {
  std::string model_id;
  uint64_t request_id = 0;
  RequestOutcome outcome = RequestOutcome::kCompleted;
  uint64_t prompt_tokens = 0;     // all rows
  uint64_t generated_tokens = 0;  // all rows
  double ttft_ms = -1;            // first token; -1 when none was generated
  double duration_ms = 0;         // first Run() to the end
};

class EBB_API RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void OnRequestStart(const RequestStart& /*start*/) {}
  virtual void OnRequestEnd(const RequestEnd& /*end*/) {}
};

}  // namespace ebb
