#include "memory/file_pages.h"

#include <functional>
#include <string>
#include <system_error>

#include "platform/vm.h"

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

// Calls `fn(start, end, rss_bytes)` for every mapping of this process (platform::ReadMappings:
// /proc/self/smaps on Linux) whose path starts with `prefix` and not with `skip` (when `skip` is
// not empty).
void ForEachMapping(const std::string& prefix, const std::string& skip,
                    const std::function<void(uintptr_t, uintptr_t, uint64_t)>& fn) {
  if (prefix.empty()) return;
  for (const platform::MemoryMapping& m : platform::ReadMappings(/*with_resident=*/true)) {
    if (m.path.compare(0, prefix.size(), prefix) != 0) continue;
    if (!skip.empty() && m.path.compare(0, skip.size(), skip) == 0) continue;
    fn(m.start, m.end, m.resident_bytes);
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
    // A hint: where the system has no page-out advice (Linux before 5.4) this does nothing.
    if (rss > 0) {
      platform::Advise(reinterpret_cast<void*>(start), end - start, platform::Advice::kPageOut);
    }
  });
  ForEachMapping(prefix, skip, [&](uintptr_t, uintptr_t, uint64_t rss) {
    ++r.after.num_mappings;
    r.after.resident_bytes += rss;
  });
  return r;
}

}  // namespace ebb::internal
