// Admission: at most `parallel` requests run at once; up to `max_queue` more wait in FIFO order;
// beyond that a request is refused at once (429 with Retry-After) instead of piling up.
//
// A Ticket is held for the whole request (generation or embedding); its destructor frees the
// slot and wakes the next waiter. Draining refuses new requests (503) and lets running and
// queued ones finish.
//
// Readiness: the admission also knows whether its slots move. Progress is a request getting a
// slot, a token coming out of a running request (Ticket::Progress) or a request ending; while
// requests run or wait and none of this happened for `stall_timeout`, the service is wedged
// (a step that never returns, a slot blocked on a client that does not read, a load that
// hangs) and Readiness() says so, so that a balancer takes the instance out of rotation.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/thread_annotations.h"

namespace ebb::server {

// What /ready answers (docs/http_api.md#draining-and-readiness).
struct Readiness {
  bool ready = true;
  std::string status = "ready";  // "ready", "draining" or "stalled"
  std::string reason;            // empty when ready
};

// Retry-After (seconds) of a 503 while draining: behind a balancer the retry goes to another
// instance at once; a client of this instance alone reaches the restarted one soon after.
inline constexpr int kDrainRetryAfterS = 1;

class Admission {
 public:
  // stall_timeout 0: readiness never fails for a stall (only while draining).
  Admission(int parallel, int max_queue,
            std::chrono::milliseconds stall_timeout = std::chrono::milliseconds(0));

  class Ticket {
   public:
    Ticket() = default;
    explicit Ticket(Admission* owner) : owner_(owner) {}
    Ticket(Ticket&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket();
    // The request made progress (a token came out); cheap, lock-free.
    void Progress() const;

   private:
    Admission* owner_ = nullptr;  // non-owning; the Admission outlives its tickets
  };

  // Waits for a slot. Throws ApiException: 429 (queue full, with Retry-After) or 503 (draining).
  Ticket Enter();
  // Stops admitting; queued requests still run.
  void Drain();
  bool draining() const;
  // Ready, draining, or stalled (requests running or waiting and no progress for the stall
  // timeout), with the reason in words.
  Readiness Check() const;
  std::chrono::milliseconds stall_timeout() const { return stall_timeout_; }

  int running() const;
  int queued() const;
  int parallel() const { return parallel_; }
  int max_queue() const { return max_queue_; }
  uint64_t rejected() const;

 private:
  void Leave();
  void NoteProgress() const;

  const int parallel_;
  const int max_queue_;
  const std::chrono::milliseconds stall_timeout_;
  // steady_clock nanoseconds of the last progress (or of the moment work began after idling).
  mutable std::atomic<int64_t> last_progress_ns_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;  // waited on with mu_ (annotated: core/thread_annotations.h)
  int running_ EBB_GUARDED_BY(mu_) = 0;
  int queued_ EBB_GUARDED_BY(mu_) = 0;
  uint64_t next_ EBB_GUARDED_BY(mu_) = 0;     // FIFO ticket numbers
  uint64_t serving_ EBB_GUARDED_BY(mu_) = 0;  // the next number allowed to run
  uint64_t rejected_ EBB_GUARDED_BY(mu_) = 0;
  bool draining_ EBB_GUARDED_BY(mu_) = false;
};

}  // namespace ebb::server
