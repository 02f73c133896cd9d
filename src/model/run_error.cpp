#include "model/run_error.h"

#include "core/strings.h"
#include "model/model_impl.h"
#include "ort/arena_stats.h"

namespace ebb::internal {
namespace {

// The CPU arena's hard cap, in bytes; 0 when there is none. arena.max_mem as the load configured
// it, else the cap the session's arena itself reports (ORT's "Limit" statistic; -1 uncapped).
// Why both: the cap error must name the cap whenever ORT enforced one. On one AMD EPYC (Zen 5)
// machine the three arena-cap tests failed now and then with a refusal that carried no cap
// (the configured figure read 0) although the arena reported its 24 MiB limit; the arena's own
// figure is what ORT enforced.
uint64_t ArenaCap(const ModelImpl& m) {
  if (m.arena_max_mem > 0) return m.arena_max_mem;
  if (!m.session) return 0;
  try {
    const ArenaStats a = ReadCpuArenaStats(*m.session, m.cpu_memory);
    return a.available && a.limit_bytes > 0 ? static_cast<uint64_t>(a.limit_bytes) : 0;
  } catch (...) {
    return 0;  // an error path: never replace ORT's failure with a statistics failure
  }
}

}  // namespace

Error RunError(const ModelImpl& m, const std::string& ort_message, const std::string& context,
               int prefill_chunk, const std::string& smaller) {
  const std::string msg = OneLine(ort_message);
  // An allocation refused (the BFC arena's texts under its cap: "Available memory", "exceeds"),
  // which names the cap when there is one; any exhausted resource is ResourceExhausted.
  const bool alloc = msg.find("Failed to allocate") != std::string::npos ||
                     msg.find("Available memory") != std::string::npos ||
                     msg.find("bad_alloc") != std::string::npos ||
                     msg.find("exceeds") != std::string::npos;
  const bool oom = alloc || IsOutOfResources(msg);
  const uint64_t cap = alloc ? ArenaCap(m) : 0;
  if (cap > 0) {
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
                     std::to_string(cap) + " allows (" + msg + "); " + hint);
  }
  return Error(oom ? ErrorCode::ResourceExhausted : ErrorCode::Internal,
               "ONNX Runtime Run failed on " + m.config.model_path.filename().string() + context +
                   ": " + msg + (alloc && !smaller.empty() ? "; " + smaller : ""));
}

bool IsOutOfResources(const std::string& ort_message) {
  // strerror's texts for ENOMEM, EAGAIN, EMFILE and ENFILE, which ORT's file mapping and thread
  // creation quote; "bad_alloc" (std::bad_alloc's what(), ORT's API boundary passes it on) and
  // ORT's allocators' "Failed to allocate".
  for (const char* marker :
       {"bad_alloc", "Failed to allocate", "Cannot allocate memory", "pthread_create",
        "Resource temporarily unavailable", "Too many open files"}) {
    if (ort_message.find(marker) != std::string::npos) return true;
  }
  return false;
}

}  // namespace ebb::internal
