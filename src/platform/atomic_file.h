// platform/atomic_file: the few file operations whose guarantees are the operating system's: a
// file replaced atomically, an exclusive lock held by an open file, a probe of whether a folder
// takes a write, and whether this process may write into a folder. Part of the platform seam
// (band 0, docs/architecture.md "The platform seam"). Nothing here throws: failures come back
// as an errno-style code (0 = success) and the step that failed, for the caller's message.
#pragma once

#include <filesystem>
#include <string_view>

namespace ebb::platform {

// The outcome of a file operation of several steps: `error` is 0 on success, else the errno of
// the step named by `step` ("open", "write", "fsync", "rename", "lock").
struct FileStepResult {
  int error = 0;
  const char* step = "";
  bool ok() const { return error == 0; }
};

// Writes `contents` to `target` atomically: into `temp` (created or truncated, mode 0600,
// close-on-exec; it should be in the target's folder), fsync, then rename over `target`. A
// reader sees the old file or the new one, never a partial one. On failure `temp` is removed and
// the failing step is one of "open", "write", "fsync" (which covers close) and "rename".
FileStepResult WriteFileAtomically(const std::filesystem::path& target,
                                   const std::filesystem::path& temp, std::string_view contents);

// An exclusive advisory lock on a lock file (flock on Linux), held while the object lives. The
// descriptor is close-on-exec, so a started child does not inherit the lock. Move-only.
class ExclusiveFileLock {
 public:
  ExclusiveFileLock() = default;
  ~ExclusiveFileLock();  // releases the lock
  ExclusiveFileLock(ExclusiveFileLock&& other) noexcept;
  ExclusiveFileLock& operator=(ExclusiveFileLock&& other) noexcept;
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;

  // Opens `file` (created with mode 0600 if missing) and locks it, blocking while another
  // process holds it (an interrupted wait is retried). Failure steps: "open", "lock"; the object
  // then holds nothing. Releases a lock it held before.
  FileStepResult Lock(const std::filesystem::path& file);
  bool locked() const { return fd_ >= 0; }

 private:
  void Release();
  int fd_ = -1;
};

// Whether `dir` takes a write: creates `probe` (exclusively, mode 0600), writes `bytes` bytes
// into it, fsyncs, closes and removes it. 0 when all of that worked, else the errno of the first
// failure (ENOSPC for a write that makes no progress): what a full file system, a quota or a
// read-only mount answers.
int ProbeWrite(const std::filesystem::path& probe, size_t bytes);

// Whether this process may create files in the folder `dir` (its permission bits and mount, as
// the kernel checks them for this process's real user).
bool MayWrite(const std::filesystem::path& dir);

}  // namespace ebb::platform
