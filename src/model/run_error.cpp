#include "model/run_error.h"

#include "core/strings.h"
#include "model/model_impl.h"

namespace ebb::internal {

Error RunError(const ModelImpl& m, const std::string& ort_message, const std::string& context,
               int prefill_chunk, const std::string& smaller) {
  const std::string msg = OneLine(ort_message);
  const bool oom = msg.find("Failed to allocate") != std::string::npos ||
                   msg.find("Available memory") != std::string::npos ||
                   msg.find("bad_alloc") != std::string::npos ||
                   msg.find("exceeds") != std::string::npos;
  if (oom && m.arena_max_mem > 0) {
    // The hard cap refused an extension: a clear error; the model stays usable.
    std::string hint = "raise arena.max_mem";
    if (!smaller.empty()) {
      hint = smaller + ", or raise arena.max_mem";
    } else if (prefill_chunk > 0) {
      hint = "shorten the prompt, lower prefill_chunk_size (now " + std::to_string(prefill_chunk) +
             "), or raise arena.max_mem";
    } else if (prefill_chunk == 0) {
      hint =
          "shorten the prompt, set prefill_chunk_size (now 0: the whole prompt in one Run), e.g. "
          "256, or raise arena.max_mem";
    }
    return Error(ErrorCode::ResourceExhausted,
                 "this step needs more ORT arena memory than the cap arena.max_mem=" +
                     std::to_string(m.arena_max_mem) + " allows (" + msg + "); " + hint);
  }
  return Error(oom ? ErrorCode::ResourceExhausted : ErrorCode::Internal,
               "ONNX Runtime Run failed on " + m.config.model_path.filename().string() + context +
                   ": " + msg + (oom && !smaller.empty() ? "; " + smaller : ""));
}

}  // namespace ebb::internal
