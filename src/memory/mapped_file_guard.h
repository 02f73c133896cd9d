// Keeps a truncated or rewritten memory-mapped model file from killing the process.
//
// Why: ONNX Runtime runs from pages of files it maps (model.onnx.data, a compiled-model cache
// entry's prepacked weights). When such a file shrinks while it is mapped (truncated, rewritten
// in place, or on a network file system that went away), the next read of a page past the new
// end of file raises SIGBUS, whose default action kills the whole server, every model and every
// request with it. A MappedFileGuard registers the address ranges of a model's mappings; a
// process-wide SIGBUS handler absorbs faults inside them by putting anonymous zero pages over the
// rest of the range, so the faulting read resumes and reads zeros, and counts the fault. The
// request that ran on those zeros computed garbage: the caller must check broken() after each
// ORT Run and fail the request (and reload the model). See docs/memory.md, "Mapped files and
// SIGBUS".
//
// The handler: installed by the first Protect of the process (once, thread-safely) through
// platform/fault.h (on Linux a SIGBUS handler with SA_SIGINFO | SA_ONSTACK). A SIGBUS outside
// every registered range goes to the handler that was installed before it: called with the same
// arguments (SA_SIGINFO) or with the signal number; if it was SIG_DFL (or SIG_IGN), the handler
// restores SIG_DFL and the fault repeats, so the default action (core dump) happens with the real
// fault. The handler makes only async-signal-safe calls (atomics, mmap, sigaction, raise). A
// handler installed after the first Protect by other code replaces this one; it must chain to it
// for the guard to keep working.
//
// Thread-safety: Protect, Rescan, faults, pages_zeroed, broken, num_ranges and Describe may be
// called from any thread, concurrently, on the same or different guards; the destructor not
// concurrently with another call on the same guard. Guards of different models are independent.
// The registered ranges live in one fixed-capacity, lock-free process-wide table of kMaxRanges
// slots that the handler reads; the destructor and Rescan wait (spinning, microseconds) for
// handlers that are using a slot they free.
//
// Ownership: the caller owns the guard and the mappings; the guard only records addresses. It
// must be destroyed before its files are unmapped (or Rescan called right after an unmap), since
// an address range that is later reused by another mapping would still be absorbed.
//
// After failure: a file that does not exist or is not mapped is not an error; it adds no range.
// When the table is full, Protect and Rescan log a warning and protect the ranges that fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ebb::internal {

struct MappedFileCounters;  // per-file fault counters the handler increments (the .cpp)

class MappedFileGuard {
 public:
  // Slots in the process-wide table of protected address ranges. ORT maps each external tensor
  // separately, so a Phi-sized model has several hundred mappings.
  static constexpr size_t kMaxRanges = 4096;

  // Registers the current mappings in this process of `files` (matched by device and inode, so a
  // path that was replaced later does not match the old mapping, and a deleted file still does).
  // Call it after the session has mapped them. Never null. Throws ebb::Error(Internal) only when
  // the SIGBUS handler cannot be installed.
  static std::unique_ptr<MappedFileGuard> Protect(std::vector<std::filesystem::path> files);

  // Unregisters every range (its table slots are free again). The handler stays installed.
  ~MappedFileGuard();

  MappedFileGuard(const MappedFileGuard&) = delete;
  MappedFileGuard& operator=(const MappedFileGuard&) = delete;

  // Rereads this process's mappings (/proc/self/maps on Linux): registers mappings of the files
  // created since (ORT may map during the first Run), and drops ranges whose mapping is gone or was
  // replaced (one read of the maps file: well under a millisecond for a few thousand mappings; no
  // ranges change when nothing was mapped or unmapped).
  void Rescan();

  // SIGBUS faults absorbed in this guard's ranges since Protect.
  uint64_t faults() const;
  // Pages the absorbed faults replaced by zeros (units: pages of platform::PageSize() bytes).
  uint64_t pages_zeroed() const;
  // faults() > 0: a read of a file returned zeros, the results of the request that ran then are
  // invalid, and the model must be reloaded.
  bool broken() const { return faults() > 0; }
  // Ranges now registered (mappings of the files found by the last Protect or Rescan).
  size_t num_ranges() const;

  // For an error message: e.g. "model.onnx.data was truncated or changed while mapped (3 pages
  // replaced by zeros); the results of the running request are invalid: reload the model".
  // Names every file that faulted; "no mapped file faulted" when none did.
  std::string Describe() const;

 private:
  struct FileId {
    std::filesystem::path path;
    uint64_t dev = 0, ino = 0;
    bool exists = false;
  };

  explicit MappedFileGuard(std::vector<std::filesystem::path> files);

  std::vector<FileId> files_;                       // immutable after construction
  std::unique_ptr<MappedFileCounters[]> counters_;  // one per file; the handler's view
  mutable std::mutex mu_;                           // guards slots_ and warned_full_
  std::vector<uint32_t> slots_;                     // table slots this guard holds (guarded by mu_)
  bool warned_full_ = false;                        // guarded by mu_
};

}  // namespace ebb::internal
