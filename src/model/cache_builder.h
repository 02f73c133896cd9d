// CacheBuilder — runs ModelCache::BuildEntry on a background thread at low priority, after the
// load that needed the entry has returned (model_cache.h), and samples the process's anonymous
// memory while it runs (memory/anon_peak.h).
//
// Ownership: a ModelImpl owns its builder; the job's functions reference the model's live
// session, so the model destroys the builder (which waits for the build) before it frees the
// session. Why wait rather than cancel: a short-lived process (one `ebb generate`) would
// otherwise never get its entry, and the next run would pay the full anonymous copy again. The
// wait is the chunks' prepacking and saving plus the check; it is logged when it takes more than
// half a second.
// Thread-safety: done() and Wait() may be called from any thread; the destructor from one.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "model/model_cache.h"

namespace ebb::internal {

class CacheBuilder {
 public:
  // Starts the thread. `what` names the model in log lines. `on_finish(committed, peak)` runs on
  // the builder thread at the end, with the process's highest anonymous memory (bytes) during the
  // build (releases the budget the build was charged, records the figures).
  CacheBuilder(ModelCache cache, ModelCache::BuildJob job, std::string what,
               std::function<void(bool committed, uint64_t peak_anon_bytes)> on_finish);
  ~CacheBuilder();  // waits for the build to finish
  CacheBuilder(const CacheBuilder&) = delete;
  CacheBuilder& operator=(const CacheBuilder&) = delete;

  bool done() const;
  // Blocks until the build finished (tests; a caller that wants the entry now). Returns whether
  // an entry was committed.
  bool Wait();

 private:
  ModelCache cache_;
  ModelCache::BuildJob job_;
  std::string what_;
  std::function<void(bool, uint64_t)> on_finish_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;       // guarded by mu_
  bool committed_ = false;  // guarded by mu_
  std::thread thread_;      // last: started once every member above exists
};

}  // namespace ebb::internal
