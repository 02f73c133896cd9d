// Admission: at most `parallel` requests run at once; up to `max_queue` more wait in FIFO order;
// beyond that a request is refused at once (429 with Retry-After) instead of piling up.
//
// A Ticket is held for the whole request (generation or embedding); its destructor frees the
// slot and wakes the next waiter. Draining refuses new requests (503) and lets running and
// queued ones finish.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ebb::server {

class Admission {
 public:
  Admission(int parallel, int max_queue);

  class Ticket {
   public:
    Ticket() = default;
    explicit Ticket(Admission* owner) : owner_(owner) {}
    Ticket(Ticket&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket();

   private:
    Admission* owner_ = nullptr;  // non-owning; the Admission outlives its tickets
  };

  // Waits for a slot. Throws ApiException: 429 (queue full, with Retry-After) or 503 (draining).
  Ticket Enter();
  // Stops admitting; queued requests still run.
  void Drain();
  bool draining() const;

  int running() const;
  int queued() const;
  int parallel() const { return parallel_; }
  int max_queue() const { return max_queue_; }
  uint64_t rejected() const;

 private:
  void Leave();

  const int parallel_;
  const int max_queue_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;        // guarded by mu_
  int queued_ = 0;         // guarded by mu_
  uint64_t next_ = 0;      // guarded by mu_: FIFO ticket numbers
  uint64_t serving_ = 0;   // guarded by mu_: the next number allowed to run
  uint64_t rejected_ = 0;  // guarded by mu_
  bool draining_ = false;  // guarded by mu_
};

}  // namespace ebb::server
