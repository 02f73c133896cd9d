#include "memory/file_pages.h"

#include <sys/mman.h>

#include <fstream>
#include <functional>
#include <string>
#include <system_error>

namespace ebb::internal {
namespace {

// "/abs/dir/" for a prefix match; empty when the folder cannot be resolved.
std::string DirPrefix(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto canonical = std::filesystem::weakly_canonical(dir, ec);
  if (ec || canonical.empty()) return {};
  std::string s = canonical.string();
  if (s.back() != '/') s += '/';
  return s;
}

// Calls `fn(start, end, rss_bytes)` for every mapping in /proc/self/smaps whose path starts with
// `prefix` and not with `skip` (when `skip` is not empty).
void ForEachMapping(const std::string& prefix, const std::string& skip,
                    const std::function<void(uintptr_t, uintptr_t, uint64_t)>& fn) {
  if (prefix.empty()) return;
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool match = false;
  uintptr_t start = 0, end = 0;
  while (std::getline(in, line)) {
    // A mapping header: "start-end perms offset dev inode [path]"; field lines start with a
    // capitalised "Name:" and never contain '-' before the first space in hex form.
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space &&
        line.find(':') > space) {
      const size_t path_at = line.find('/');
      match = path_at != std::string::npos && line.compare(path_at, prefix.size(), prefix) == 0 &&
              (skip.empty() || line.compare(path_at, skip.size(), skip) != 0);
      if (match) {
        start = std::stoull(line.substr(0, dash), nullptr, 16);
        end = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
      }
      continue;
    }
    if (match && line.rfind("Rss:", 0) == 0) {
      fn(start, end, std::stoull(line.substr(4)) * 1024);  // "Rss:   1234 kB"
      match = false;
    }
  }
}

}  // namespace

MappedFilePages ResidentFilePages(const std::filesystem::path& dir) {
  MappedFilePages r;
  ForEachMapping(DirPrefix(dir), "", [&](uintptr_t, uintptr_t, uint64_t rss) {
    ++r.num_mappings;
    r.resident_bytes += rss;
  });
  return r;
}

FilePagesRelease ReleaseFilePages(const std::filesystem::path& dir,
                                  const std::filesystem::path& keep) {
  FilePagesRelease r;
  const std::string prefix = DirPrefix(dir);
  const std::string skip = keep.empty() ? std::string() : DirPrefix(keep);
  ForEachMapping(prefix, skip, [&](uintptr_t start, uintptr_t end, uint64_t rss) {
    ++r.before.num_mappings;
    r.before.resident_bytes += rss;
#ifdef MADV_PAGEOUT
    if (rss > 0) madvise(reinterpret_cast<void*>(start), end - start, MADV_PAGEOUT);
#else
    (void)start;
    (void)end;
#endif
  });
  ForEachMapping(prefix, skip, [&](uintptr_t, uintptr_t, uint64_t rss) {
    ++r.after.num_mappings;
    r.after.resident_bytes += rss;
  });
  return r;
}

}  // namespace ebb::internal
