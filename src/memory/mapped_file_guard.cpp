#include "memory/mapped_file_guard.h"

#include <ebb/error.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/log.h"
#include "platform/fault.h"
#include "platform/file.h"
#include "platform/vm.h"

namespace ebb::internal {

struct MappedFileCounters {
  std::atomic<uint64_t> faults{0};
  std::atomic<uint64_t> pages{0};
};

namespace {

// ---- The process-wide table the SIGBUS handler reads ------------------------------------------
//
// A slot goes kFree -> kClaimed (CAS by the registering thread, which then writes the fields) ->
// kLive (published) -> kRetiring (the handler ignores it) -> kFree once no handler is running
// (g_in_flight == 0), so a handler never uses a slot, or the counters it points to, after the
// guard that owns them has moved on. All atomics are sequentially consistent: the handler's
// increment of g_in_flight and its load of a slot's state, and the retiring thread's store of
// kRetiring and its load of g_in_flight, are ordered (either the handler sees kRetiring or the
// retiring thread sees the handler in flight).
enum SlotState : uint32_t { kFree = 0, kClaimed, kLive, kRetiring };

struct Slot {
  std::atomic<uint32_t> state{kFree};
  std::atomic<uintptr_t> start{0}, end{0};             // [start, end), page-aligned addresses
  std::atomic<int> access{0};                          // platform::Access bits of the mapping
  std::atomic<MappedFileCounters*> counters{nullptr};  // non-owning; the guard's
};

static_assert(std::atomic<uintptr_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<MappedFileCounters*>::is_always_lock_free);

Slot g_slots[MappedFileGuard::kMaxRanges];
std::atomic<size_t> g_slots_used{0};  // high-water mark: slots at or past it were never claimed
std::atomic<int> g_in_flight{0};      // handlers between their table lookup and its last use
uintptr_t g_page_size = 4096;         // written before the handler is installed
std::once_flag g_install_once;

// The fault handler (platform/fault.h), in signal context. Async-signal-safe: atomics and
// platform::MapZerosOver only.
bool AbsorbFault(uintptr_t addr) {
  bool absorbed = false;
  g_in_flight.fetch_add(1);
  const size_t used = g_slots_used.load();
  for (size_t i = 0; i < used; ++i) {
    Slot& slot = g_slots[i];
    if (slot.state.load() != kLive) continue;
    const uintptr_t start = slot.start.load(), end = slot.end.load();
    if (addr < start || addr >= end) continue;
    const uintptr_t page = addr & ~(g_page_size - 1);
    // When the zero pages cannot be mapped (no memory for them) the fault goes on to the
    // previous handler: by default the process dies as it would have without the guard.
    if (platform::MapZerosOver(reinterpret_cast<void*>(page), end - page, slot.access.load())) {
      MappedFileCounters* counters = slot.counters.load();
      counters->faults.fetch_add(1);
      counters->pages.fetch_add((end - page) / g_page_size);
      absorbed = true;
    }
    break;
  }
  g_in_flight.fetch_sub(1);
  return absorbed;
}

void InstallHandlerOnce() {
  std::call_once(g_install_once, [] {
    g_page_size = static_cast<uintptr_t>(platform::PageSize());
    if (const int err = platform::InstallFileFaultHandler(AbsorbFault); err != 0)
      throw Error(ErrorCode::Internal, std::string("sigaction(SIGBUS): ") + std::strerror(err));
  });
}

// A free slot, claimed (kClaimed), or kMaxRanges when the table is full. Lock-free.
size_t ClaimSlot() {
  for (size_t i = 0; i < MappedFileGuard::kMaxRanges; ++i) {
    uint32_t expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kClaimed)) continue;
    size_t used = g_slots_used.load();
    while (used < i + 1 && !g_slots_used.compare_exchange_weak(used, i + 1)) {
    }
    return i;
  }
  return MappedFileGuard::kMaxRanges;
}

// Takes the slots out of the handler's view, waits for running handlers, and frees them.
void RetireSlots(const std::vector<uint32_t>& slots) {
  if (slots.empty()) return;
  for (uint32_t i : slots) g_slots[i].state.store(kRetiring);
  while (g_in_flight.load() != 0) std::this_thread::yield();  // a handler runs one mmap
  for (uint32_t i : slots) {
    g_slots[i].counters.store(nullptr);
    g_slots[i].state.store(kFree);
  }
}

struct Range {
  uintptr_t start = 0, end = 0;
  int access = platform::kAccessNone;
  size_t file = 0;  // index into the guard's files
};

// The mappings of this process (platform::ReadMappings: /proc/self/maps on Linux) whose device
// and inode are one of `ids`.
template <typename FileIds>
std::vector<Range> FindMappings(const FileIds& ids) {
  std::vector<Range> ranges;
  for (const platform::MemoryMapping& m : platform::ReadMappings()) {
    if (m.inode == 0) continue;
    for (size_t f = 0; f < ids.size(); ++f) {
      const auto& id = ids[f];
      if (!id.exists || id.ino != m.inode || id.dev != m.device) continue;
      ranges.push_back(Range{m.start, m.end, m.access, f});
      break;
    }
  }
  return ranges;
}

}  // namespace

MappedFileGuard::MappedFileGuard(std::vector<std::filesystem::path> files)
    : counters_(std::make_unique<MappedFileCounters[]>(files.size())) {
  files_.reserve(files.size());
  for (auto& path : files) {
    FileId id;
    platform::FileInfo info;
    if (platform::StatPath(path, &info) == 0) {
      id.dev = info.device;
      id.ino = info.inode;
      id.exists = true;
    }
    id.path = std::move(path);
    files_.push_back(std::move(id));
  }
}

std::unique_ptr<MappedFileGuard> MappedFileGuard::Protect(
    std::vector<std::filesystem::path> files) {
  InstallHandlerOnce();
  std::unique_ptr<MappedFileGuard> guard(new MappedFileGuard(std::move(files)));
  guard->Rescan();
  return guard;
}

MappedFileGuard::~MappedFileGuard() {
  std::lock_guard<std::mutex> lock(mu_);
  RetireSlots(slots_);
}

void MappedFileGuard::Rescan() {
  // Under the lock, so that a scan from before an munmap cannot re-register what a later scan
  // dropped.
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Range> found = FindMappings(files_);
  // Keep the slots whose mapping is still there, unchanged; retire the others.
  std::vector<uint32_t> keep, drop;
  for (uint32_t i : slots_) {
    const Slot& slot = g_slots[i];
    const uintptr_t start = slot.start.load(), end = slot.end.load();
    const int access = slot.access.load();
    MappedFileCounters* counters = slot.counters.load();
    bool present = false;
    for (auto it = found.begin(); it != found.end(); ++it) {
      if (it->start == start && it->end == end && it->access == access &&
          &counters_[it->file] == counters) {
        found.erase(it);
        present = true;
        break;
      }
    }
    (present ? keep : drop).push_back(i);
  }
  RetireSlots(drop);
  slots_ = std::move(keep);
  size_t not_protected = 0;
  for (const Range& r : found) {
    const size_t i = ClaimSlot();
    if (i == kMaxRanges) {
      ++not_protected;
      continue;
    }
    Slot& slot = g_slots[i];
    slot.start.store(r.start);
    slot.end.store(r.end);
    slot.access.store(r.access);
    slot.counters.store(&counters_[r.file]);
    slot.state.store(kLive);
    slots_.push_back(static_cast<uint32_t>(i));
  }
  if (not_protected > 0 && !warned_full_) {
    warned_full_ = true;
    EBB_LOG_WARN(
        "{} mappings of model files are not protected against truncation (SIGBUS): the "
        "process-wide table of {} ranges is full",
        not_protected, kMaxRanges);
  }
}

uint64_t MappedFileGuard::faults() const {
  uint64_t n = 0;
  for (size_t f = 0; f < files_.size(); ++f) n += counters_[f].faults.load();
  return n;
}

uint64_t MappedFileGuard::pages_zeroed() const {
  uint64_t n = 0;
  for (size_t f = 0; f < files_.size(); ++f) n += counters_[f].pages.load();
  return n;
}

size_t MappedFileGuard::num_ranges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

std::string MappedFileGuard::Describe() const {
  std::string what;
  for (size_t f = 0; f < files_.size(); ++f) {
    const uint64_t pages = counters_[f].pages.load();
    if (counters_[f].faults.load() == 0) continue;
    if (!what.empty()) what += "; ";
    what += files_[f].path.string() + " was truncated or changed while mapped (" +
            std::to_string(pages) + (pages == 1 ? " page" : " pages") + " replaced by zeros)";
  }
  if (what.empty()) return "no mapped file faulted";
  return what + "; the results of the running request are invalid: reload the model";
}

}  // namespace ebb::internal
