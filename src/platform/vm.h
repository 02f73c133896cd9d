// platform/vm: virtual memory. Pages, anonymous and file mappings, advice to the kernel about
// ranges, which pages of a range are resident, and the list of this process's mappings. Part of
// the platform seam (band 0, docs/architecture.md "The platform seam"): the only folder that
// calls the operating system directly.
//
// Contract: nothing here throws; a failure is reported as a value (an errno-style code, 0 for
// success, or an empty result) for the caller to turn into an ebb::Error. Units are bytes and
// addresses unless a name says pages. The caller owns every mapping it gets and unmaps it with
// Unmap (same address and length, or a page-aligned piece of it). Thread-safe: no shared state
// (the fault-injection hooks of platform/testing.h aside).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ebb::platform {

class File;

// The system page size in bytes, read once (4096 when the system cannot say).
uint64_t PageSize();

// Access to a mapping's pages: a bit set of these.
enum Access : int { kAccessNone = 0, kAccessRead = 1, kAccessWrite = 2, kAccessExec = 4 };

// A new mapping's address, or why there is none: exactly one of addr != nullptr and err != 0.
struct MapResult {
  void* addr = nullptr;
  int err = 0;
};

// A private, readable and writable mapping of `bytes` of zero-filled memory. With
// reserve=false the system does not set aside (swap) room for it: address space only, pages are
// committed as they are first written (Linux MAP_NORESERVE). Fault injection: Op::kMapAnonymous.
MapResult MapAnonymous(uint64_t bytes, bool reserve = true);

// The first `bytes` of `file`, mapped read-only and private (a later change to the file may or
// may not show). The mapping stays valid after `file` is closed. Fault injection: Op::kMapFile.
MapResult MapFileReadOnly(const File& file, uint64_t bytes);

// Unmaps [addr, addr + bytes) (page-aligned). Returns 0 or an errno code.
int Unmap(void* addr, uint64_t bytes) noexcept;

// Replaces [addr, addr + bytes) (page-aligned, inside an existing mapping) with fresh zero pages
// of the given Access bits, in place. Async-signal-safe: a fault handler (platform/fault.h) may
// call it. Returns whether it succeeded.
bool MapZerosOver(void* addr, uint64_t bytes, int access) noexcept;

// Advice about a range's pages. A hint: the data stays valid except for kDontNeed.
enum class Advice {
  kDontNeed,  // drop the pages now; private anonymous memory reads back as zeros (MADV_DONTNEED)
  kWillNeed,  // read ahead: the range is about to be used (MADV_WILLNEED)
  kPageOut,   // reclaim the pages now: clean file pages are dropped, dirty ones swapped
              // (MADV_PAGEOUT, Linux 5.4+)
  kCold,      // reclaim these first under pressure (MADV_COLD, Linux 5.4+)
  kHugePage,  // back the range with huge pages where possible (MADV_HUGEPAGE)
};

// Gives `advice` for [addr, addr + bytes) (addr page-aligned). Returns 0 or an errno code
// (ENOSYS when this build or system has no such advice).
int Advise(void* addr, uint64_t bytes, Advice advice) noexcept;

// How many pages of [addr, addr + bytes) (addr page-aligned, a mapped range) are resident in
// memory; nullopt when the system cannot say.
std::optional<uint64_t> ResidentPages(const void* addr, uint64_t bytes);

// One mapping of this process's address space.
struct MemoryMapping {
  uintptr_t start = 0, end = 0;  // [start, end), page-aligned
  int access = kAccessNone;      // Access bits
  bool shared = false;           // shared (true) or private copy-on-write (false)
  uint64_t offset = 0;           // offset into the file, bytes
  uint64_t device = 0;           // the file's device, as FileInfo::device (platform/file.h)
  uint64_t inode = 0;            // the file's inode, as FileInfo::inode; 0 for anonymous memory
  std::string path;              // the file's path, or a system name ("[heap]"); may be empty
  uint64_t resident_bytes = 0;   // resident memory of the mapping (only with_resident=true)
};

// This process's mappings, in address order. with_resident=true also fills resident_bytes (a
// slower read: Linux /proc/self/smaps instead of /proc/self/maps). Empty when the system cannot
// say.
std::vector<MemoryMapping> ReadMappings(bool with_resident = false);

}  // namespace ebb::platform
