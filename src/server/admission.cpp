#include "server/admission.h"

#include <algorithm>
#include <string>

#include "server/api_error.h"

namespace ebb::server {

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Admission::Admission(int parallel, int max_queue, std::chrono::milliseconds stall_timeout)
    : parallel_(std::max(1, parallel)),
      max_queue_(std::max(0, max_queue)),
      stall_timeout_(std::max(std::chrono::milliseconds(0), stall_timeout)),
      last_progress_ns_(NowNs()) {}

Admission::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->Leave();
}

void Admission::Ticket::Progress() const {
  if (owner_ != nullptr) owner_->NoteProgress();
}

void Admission::NoteProgress() const {
  last_progress_ns_.store(NowNs(), std::memory_order_relaxed);
}

Admission::Ticket Admission::Enter() {
  MutexLock lock(mu_);
  if (draining_) {
    throw ApiException({503, "unavailable_error",
                        "the service is shutting down and accepts no new requests; retry against "
                        "the restarted service",
                        std::nullopt, "draining", kDrainRetryAfterS});
  }
  if (running_ >= parallel_ && queued_ >= max_queue_) {
    ++rejected_;
    throw ApiException({429, "rate_limit_error",
                        "the service is busy: " + std::to_string(running_) +
                            " requests running "
                            "(--parallel " +
                            std::to_string(parallel_) + ") and " + std::to_string(queued_) +
                            " queued (--max-queue " + std::to_string(max_queue_) +
                            "); retry after the Retry-After delay",
                        std::nullopt, "queue_full", 1});
  }
  // Work begins after idling: the stall clock starts now, not at the last request of long ago.
  if (running_ == 0 && queued_ == 0) NoteProgress();
  const uint64_t mine = next_++;
  ++queued_;
  while (!(running_ < parallel_ && serving_ == mine)) cv_.wait(mu_);
  --queued_;
  ++serving_;
  ++running_;
  NoteProgress();    // a request got a slot
  cv_.notify_all();  // the next in line may fit too
  return Ticket(this);
}

void Admission::Leave() {
  {
    MutexLock lock(mu_);
    --running_;
    NoteProgress();  // a request ended (any outcome)
  }
  cv_.notify_all();
}

void Admission::Drain() {
  MutexLock lock(mu_);
  draining_ = true;
}
Readiness Admission::Check() const {
  MutexLock lock(mu_);
  if (draining_) {
    return {false, "draining",
            "the service is shutting down (SIGTERM): running requests finish, new ones get 503"};
  }
  if (stall_timeout_.count() == 0 || (running_ == 0 && queued_ == 0)) return {};
  const auto idle = std::chrono::nanoseconds(NowNs() - last_progress_ns_.load());
  if (idle < stall_timeout_) return {};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(idle).count();
  return {false, "stalled",
          "no request has made progress (a slot granted, a token generated, a request "
          "finished) for " +
              std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s while " +
              std::to_string(running_) + " run and " + std::to_string(queued_) +
              " wait (--ready-stall-timeout " + std::to_string(stall_timeout_.count() / 1000) +
              " s)"};
}

bool Admission::draining() const {
  MutexLock lock(mu_);
  return draining_;
}
int Admission::running() const {
  MutexLock lock(mu_);
  return running_;
}
int Admission::queued() const {
  MutexLock lock(mu_);
  return queued_;
}
uint64_t Admission::rejected() const {
  MutexLock lock(mu_);
  return rejected_;
}

}  // namespace ebb::server
