// Linux implementation of platform/vm.h.
#include "platform/vm.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "platform/file.h"
#include "platform/testing.h"

namespace ebb::platform {
namespace {

int ToProt(int access) {
  int prot = PROT_NONE;
  if (access & kAccessRead) prot |= PROT_READ;
  if (access & kAccessWrite) prot |= PROT_WRITE;
  if (access & kAccessExec) prot |= PROT_EXEC;
  return prot;
}

MapResult Mapped(void* p) {
  MapResult r;
  if (p == MAP_FAILED) {
    r.err = errno;
  } else {
    r.addr = p;
  }
  return r;
}

}  // namespace

uint64_t PageSize() {
  static const uint64_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

MapResult MapAnonymous(uint64_t bytes, bool reserve) {
  if (const int err = testing::TakeInjectedFailure(testing::Op::kMapAnonymous); err != 0) {
    MapResult r;
    r.err = err;
    return r;
  }
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? 0 : MAP_NORESERVE);
  return Mapped(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0));
}

MapResult MapFileReadOnly(const File& file, uint64_t bytes) {
  if (const int err = testing::TakeInjectedFailure(testing::Op::kMapFile); err != 0) {
    MapResult r;
    r.err = err;
    return r;
  }
  return Mapped(::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, file.native_handle(), 0));
}

int Unmap(void* addr, uint64_t bytes) noexcept { return ::munmap(addr, bytes) == 0 ? 0 : errno; }

bool MapZerosOver(void* addr, uint64_t bytes, int access) noexcept {
  // mmap is async-signal-safe in practice on Linux (a system call); errno is the caller's.
  return ::mmap(addr, bytes, ToProt(access), MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
         MAP_FAILED;
}

int Advise(void* addr, uint64_t bytes, Advice advice) noexcept {
  int how = -1;
  switch (advice) {
    case Advice::kDontNeed:
      how = MADV_DONTNEED;
      break;
    case Advice::kWillNeed:
      how = MADV_WILLNEED;
      break;
    case Advice::kPageOut:
#ifdef MADV_PAGEOUT
      how = MADV_PAGEOUT;
#endif
      break;
    case Advice::kCold:
#ifdef MADV_COLD
      how = MADV_COLD;
#endif
      break;
    case Advice::kHugePage:
#ifdef MADV_HUGEPAGE
      how = MADV_HUGEPAGE;
#endif
      break;
  }
  if (how < 0) return ENOSYS;
  return ::madvise(addr, bytes, how) == 0 ? 0 : errno;
}

std::optional<uint64_t> ResidentPages(const void* addr, uint64_t bytes) {
  const uint64_t page = PageSize();
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  if (::mincore(const_cast<void*>(addr), bytes, vec.data()) != 0) return std::nullopt;
  uint64_t n = 0;
  for (unsigned char c : vec) n += c & 1;
  return n;
}

std::vector<MemoryMapping> ReadMappings(bool with_resident) {
  std::vector<MemoryMapping> out;
  std::ifstream in(with_resident ? "/proc/self/smaps" : "/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    // A mapping: "start-end perms offset major:minor inode [path]" (hex, except the inode). In
    // smaps, the field lines after it start with a capitalised "Name:", with no '-' before the
    // first space and the ':' before it.
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    const bool header = dash != std::string::npos && space != std::string::npos && dash < space &&
                        line.find(':') > space;
    if (!header) {
      if (with_resident && !out.empty() && line.rfind("Rss:", 0) == 0) {
        out.back().resident_bytes = std::strtoull(line.c_str() + 4, nullptr, 10) * 1024;  // kB
      }
      continue;
    }
    unsigned long start = 0, end = 0, offset = 0, inode = 0;
    unsigned int major_no = 0, minor_no = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %x:%x %lu%n", &start, &end, perms, &offset,
                    &major_no, &minor_no, &inode, &path_at) != 7)
      continue;
    MemoryMapping m;
    m.start = start;
    m.end = end;
    if (perms[0] == 'r') m.access |= kAccessRead;
    if (perms[1] == 'w') m.access |= kAccessWrite;
    if (perms[2] == 'x') m.access |= kAccessExec;
    m.shared = perms[3] == 's';
    m.offset = offset;
    m.device = makedev(major_no, minor_no);
    m.inode = inode;
    const size_t path_begin = line.find_first_not_of(' ', static_cast<size_t>(path_at));
    if (path_begin != std::string::npos) m.path = line.substr(path_begin);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace ebb::platform
