#include "kv/kv_pool.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/pages.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "platform/vm.h"

namespace ebb::internal {

KvBlock& KvBlock::operator=(KvBlock&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.pool_ = nullptr;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void KvBlock::Reset() {
  if (data_ != nullptr) pool_->Release(data_, bytes_);
  pool_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

KvPool::KvPool(uint64_t max_bytes, uint64_t retain_bytes, std::unique_ptr<KvDeviceMemory> device)
    : max_bytes_(max_bytes), retain_bytes_(retain_bytes), device_(std::move(device)) {
  stats_.max_bytes = max_bytes;
  stats_.retain_limit_bytes = retain_bytes;
}

KvPool::~KvPool() {
  // Blocks must not outlive the pool (see header); retained regions go back to the OS.
  Trim();
}

KvCharge& KvCharge::operator=(KvCharge&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    bytes_ = other.bytes_;
    other.pool_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void KvCharge::Reset() {
  if (pool_ != nullptr && bytes_ > 0) pool_->Uncharge(bytes_);
  pool_ = nullptr;
  bytes_ = 0;
}

uint64_t KvPool::RoundSize(uint64_t bytes) const {
  if (device_) return (bytes + 255) / 256 * 256;
  return PageRound(bytes);
}

void KvPool::set_device_budget(uint64_t limit_bytes, uint64_t fixed_bytes, std::string option) {
  device_limit_ = limit_bytes;
  device_fixed_ = fixed_bytes;
  device_option_ = std::move(option);
}

void KvPool::FreeRegions(const std::multimap<uint64_t, void*>& regions) noexcept {
  for (const auto& [bytes, data] : regions) {
    if (device_) {
      device_->Free(data);
    } else {
      platform::Unmap(data, bytes);
    }
  }
}

KvPool::ReleaseFn KvPool::Admit(uint64_t size, const char* what, bool may_reclaim) {
  AdmitFn admit;
  ReleaseFn release;
  for (int attempt = 0;; ++attempt) {
    ReclaimFn reclaim;
    uint64_t shortfall = 0;
    if (device_limit_ > 0) {
      // The device budget: the weights, the KV in use, what the pool retains, and this request.
      // Retained blocks go back first; then the request is refused.
      std::multimap<uint64_t, void*> freed;
      bool over = false;
      uint64_t in_use = 0;
      {
        MutexLock lock(mu_);
        // A retained buffer of this size is reused: it moves from retained to in use.
        const uint64_t adds = retained_.count(size) > 0 ? 0 : size;
        if (device_fixed_ + stats_.in_use_bytes + stats_.retained_bytes + adds > device_limit_ &&
            stats_.retained_bytes > 0) {
          freed.swap(retained_);
          stats_.retained_bytes = 0;
          stats_.reserved_bytes = stats_.in_use_bytes;
        }
        over = device_fixed_ + stats_.in_use_bytes + stats_.retained_bytes +
                   (retained_.count(size) > 0 ? 0 : size) >
               device_limit_;
        if (over && may_reclaim) ++stats_.num_refusals;
        in_use = stats_.in_use_bytes;
      }
      FreeRegions(freed);
      if (over) {
        throw Error(ErrorCode::ResourceExhausted,
                    std::string(what) + " needs " + FormatBytes(size) + " (" +
                        std::to_string(size) + " bytes) on " + device_->name() + ", but " +
                        device_option_ + "=" + std::to_string(device_limit_) + " (" +
                        FormatBytes(device_limit_) + ") has " + FormatBytes(device_fixed_) +
                        " of weights and " + FormatBytes(in_use) +
                        " of KV in use there; lower max_length or the batch size, or raise " +
                        device_option_);
      }
    }
    {
      // Check and charge under one lock, so that concurrent allocations cannot all pass the
      // check and together go over the budget. Every failure below uncharges.
      MutexLock lock(mu_);
      const bool over =
          max_bytes_ > 0 && (size > max_bytes_ || stats_.in_use_bytes > max_bytes_ - size);
      if (!over) {
        stats_.in_use_bytes += size;
        admit = admit_;
        release = release_;
        break;
      }
      // The prefix cache gives its memory back before anything is refused: once, outside the
      // lock (its blocks return to this pool).
      if (may_reclaim && attempt == 0 && size <= max_bytes_ && reclaim_) {
        reclaim = reclaim_;
        shortfall = stats_.in_use_bytes + size - max_bytes_;
      } else {
        // A prefix cache block that does not fit is simply not stored: not a refusal.
        if (may_reclaim) ++stats_.num_refusals;
        throw Error(ErrorCode::ResourceExhausted,
                    std::string(what) + " needs " + FormatBytes(size) + " (" +
                        std::to_string(size) + " bytes) but the model's KV budget " +
                        "kv_cache.max_bytes=" + std::to_string(max_bytes_) + " (" +
                        FormatBytes(max_bytes_) + ") has " + std::to_string(stats_.in_use_bytes) +
                        " bytes in use; lower max_length or the batch size, or raise "
                        "kv_cache.max_bytes (kv_cache.mode=static reserves max_length up front; "
                        "dynamic grows as needed)");
      }
    }
    reclaim(shortfall);
  }
  if (admit) {
    try {
      admit(size, may_reclaim);  // may throw: then only our charge is undone
    } catch (...) {
      MutexLock lock(mu_);
      stats_.in_use_bytes -= size;
      stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
      throw;
    }
  }
  return release;
}

KvCharge KvPool::Charge(uint64_t bytes, const char* what) {
  if (bytes == 0) return KvCharge();
  const uint64_t size = RoundSize(bytes);
  Admit(size, what, /*may_reclaim=*/true);  // may throw; nothing charged then
  MutexLock lock(mu_);
  ++stats_.num_allocations;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
  return KvCharge(this, size);
}

void KvPool::Uncharge(uint64_t bytes) noexcept {
  ReleaseFn release;
  {
    MutexLock lock(mu_);
    release = release_;
    stats_.in_use_bytes -= bytes;
    stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
  }
  if (release) release(bytes);
}

KvBlock KvPool::Allocate(uint64_t bytes, const char* what, bool may_reclaim) {
  if (bytes == 0) return KvBlock();
  const uint64_t size = RoundSize(bytes);
  const ReleaseFn release = Admit(size, what, may_reclaim);  // may throw; nothing charged then
  auto uncharge = [&] {
    MutexLock lock(mu_);
    stats_.in_use_bytes -= size;
    stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
  };

  void* data = nullptr;
  bool os_map = false;
  {
    MutexLock lock(mu_);
    // Best fit among retained regions of at least `size`, but not more than twice as big.
    auto it = retained_.lower_bound(size);
    if (device_ && it != retained_.end() && it->first != size) it = retained_.end();
    if (it != retained_.end() && it->first <= 2 * size) {
      data = it->second;
      const uint64_t got = it->first;
      retained_.erase(it);
      stats_.retained_bytes -= got;
      // A bigger region is split: the tail is unmapped so accounting stays exact.
      if (got > size) platform::Unmap(static_cast<char*>(data) + size, got - size);
    }
  }
  if (data == nullptr && device_) {
    try {
      data = device_->Alloc(size);
    } catch (...) {
      uncharge();
      if (release) release(size);
      throw;
    }
    os_map = true;
  }
  if (data == nullptr) {
    const platform::MapResult m = platform::MapAnonymous(size);
    if (m.addr == nullptr) {
      const int err = m.err;
      uncharge();
      if (release) release(size);
      throw Error(ErrorCode::ResourceExhausted, std::string(what) + ": the OS refused " +
                                                    FormatBytes(size) + " (" + std::strerror(err) +
                                                    "); lower max_length or the batch size");
    }
    data = m.addr;
    os_map = true;
  }
  MutexLock lock(mu_);
  if (os_map) ++stats_.num_os_maps;
  ++stats_.num_allocations;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
  return KvBlock(this, data, size);
}

void KvPool::Release(void* data, uint64_t bytes) noexcept {
  bool keep = false;
  ReleaseFn release;
  {
    MutexLock lock(mu_);
    release = release_;
    stats_.in_use_bytes -= bytes;
    if (!keep_nothing_ && stats_.retained_bytes + bytes <= retain_bytes_) {
      retained_.emplace(bytes, data);
      stats_.retained_bytes += bytes;
      keep = true;
    }
    stats_.reserved_bytes = stats_.in_use_bytes + stats_.retained_bytes;
  }
  if (!keep) {
    if (device_) {
      device_->Free(data);
    } else {
      platform::Unmap(data, bytes);
    }
  }
  if (release) release(bytes);
}

uint64_t KvPool::Trim() {
  std::multimap<uint64_t, void*> regions;
  {
    MutexLock lock(mu_);
    regions.swap(retained_);
    stats_.retained_bytes = 0;
    stats_.reserved_bytes = stats_.in_use_bytes;
  }
  uint64_t freed = 0;
  for (const auto& [bytes, data] : regions) freed += bytes;
  FreeRegions(regions);
  return freed;
}

void KvPool::set_keep_nothing(bool on) {
  {
    MutexLock lock(mu_);
    keep_nothing_ = on;
  }
  if (on) Trim();
}

KvStats KvPool::Stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void KvPool::set_reclaim_fn(ReclaimFn fn) {
  MutexLock lock(mu_);
  reclaim_ = std::move(fn);
}

void KvPool::set_admit_fn(AdmitFn fn, ReleaseFn release) {
  MutexLock lock(mu_);
  admit_ = std::move(fn);
  release_ = std::move(release);
}

}  // namespace ebb::internal
