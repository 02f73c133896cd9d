#include "server/admission.h"

#include <algorithm>
#include <string>

#include "server/api_error.h"

namespace ebb::server {

Admission::Admission(int parallel, int max_queue)
    : parallel_(std::max(1, parallel)), max_queue_(std::max(0, max_queue)) {}

Admission::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->Leave();
}

Admission::Ticket Admission::Enter() {
  std::unique_lock<std::mutex> lock(mu_);
  if (draining_) {
    throw ApiException({503, "unavailable_error",
                        "the service is shutting down and accepts no new requests; retry against "
                        "the restarted service",
                        std::nullopt, "draining", 2});
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
  const uint64_t mine = next_++;
  ++queued_;
  cv_.wait(lock, [&] { return running_ < parallel_ && serving_ == mine; });
  --queued_;
  ++serving_;
  ++running_;
  cv_.notify_all();  // the next in line may fit too
  return Ticket(this);
}

void Admission::Leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  cv_.notify_all();
}

void Admission::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}
bool Admission::draining() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draining_;
}
int Admission::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}
int Admission::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}
uint64_t Admission::rejected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

}  // namespace ebb::server
