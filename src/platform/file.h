// platform/file: files and folders. An owned open file (File), what the system knows about a
// path or an open file (FileInfo), whole-file operations by path (sync, rename, remove, make a
// folder, touch, prefetch) and an exclusive advisory lock (FileLock). Part of the platform seam
// (band 0, docs/architecture.md "The platform seam"): the only folder that calls the operating
// system directly.
//
// Contract: nothing here throws; a failure is reported as an errno-style code (0 for success;
// ENOENT, EACCES, ENOSPC, ... with their POSIX meanings on every system) for the caller to turn
// into an ebb::Error. Sizes and offsets are bytes; times are nanoseconds since the Unix epoch.
// Every file this opens is closed on exec. Interrupted system calls are retried. Thread-safety:
// a File is used by one thread at a time; the free functions are reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace ebb::platform {

enum class FileType { kRegular, kDirectory, kFifo, kCharDevice, kBlockDevice, kSocket, kOther };

struct FileInfo {
  FileType type = FileType::kOther;
  uint64_t size = 0;     // bytes (regular files)
  int64_t mtime_ns = 0;  // last modification
  uint64_t device = 0;   // the file system's device; with inode, the file's identity
  uint64_t inode = 0;
};

// What the system knows about `path` (symlinks followed). Returns 0 or an errno code.
int StatPath(const std::filesystem::path& path, FileInfo* out);

// How File::Open opens a path.
enum class OpenMode {
  kRead,             // read only
  kReadNonBlocking,  // read only, without blocking on a FIFO with no writer or taking a
                     // terminal; File::SetBlocking() before reading
  kWriteTruncate,    // write only; created (0644) or emptied
  kReadWriteCreate,  // read and write; created (0644) when missing, kept when present
  // As kWriteTruncate and kReadWriteCreate, created owner-only (0600): files that hold a secret
  // (the service's API key) or a lock only its owner takes.
  kWriteTruncatePrivate,
  kReadWriteCreatePrivate,
  kCreateNewPrivate,  // write only; created (0600), failing with EEXIST when it exists
};

// Bytes moved by one read, or why none: err != 0 only on failure (bytes == 0 at end of file).
struct IoResult {
  uint64_t bytes = 0;
  int err = 0;
};

// An open file, closed by the destructor. Move-only. A default-constructed File is not open.
class File {
 public:
  File() = default;
  ~File();
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Opens `path`; on failure returns a File that is not open and sets *err (else *err = 0).
  static File Open(const std::filesystem::path& path, OpenMode mode, int* err);

  // A new, empty, nameless read-write file in memory (Linux memfd_create; `name` shows in
  // debugging output only). Its pages are page cache, released when it is closed. OpenablePath()
  // names it for another library to open while it lives.
  static File CreateInMemory(const char* name, int* err);

  bool is_open() const { return fd_ >= 0; }

  // Closes it now; returns 0 or the errno of the close (a delayed write error). Not open after.
  int Close();

  // What the system knows about the open file. Returns 0 or an errno code.
  int Stat(FileInfo* out) const;

  // Clears non-blocking mode (kReadNonBlocking) for the reads. Best effort.
  void SetBlocking();

  // Reads up to `n` bytes at the current position / at `offset` (the position is not moved).
  IoResult Read(void* buf, uint64_t n);
  IoResult ReadAt(void* buf, uint64_t n, uint64_t offset);

  // Writes all of [p, p + n) at the current position. Returns 0 or an errno code (ENOSPC also
  // for a write that makes no progress). Fault injection: Op::kWrite.
  int WriteAll(const void* p, uint64_t n);
  int WriteAll(std::string_view s) { return WriteAll(s.data(), s.size()); }

  // Flushes the file's data and metadata to its storage. Returns 0 or an errno code. Fault
  // injection: Op::kSync.
  int Sync();

  // A path by which another library can open this same file while it is open (Linux
  // /proc/self/fd/N); empty when not open.
  std::filesystem::path OpenablePath() const;

  // The system's handle (a file descriptor on POSIX systems), for a platform/ implementation.
  int native_handle() const { return fd_; }

 private:
  explicit File(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Flushes a file's (SyncFile) or a folder's entries' (SyncDirectory: renames and new names in
// it) to storage. Returns 0 or an errno code (of the open or of the sync). Fault injection:
// Op::kSync.
int SyncFile(const std::filesystem::path& path);
int SyncDirectory(const std::filesystem::path& path);

// Renames `from` to `to`, atomically, replacing a file or an empty folder at `to`. Returns 0 or
// an errno code (EEXIST or ENOTEMPTY when `to` is a folder that is not empty).
int Rename(const std::filesystem::path& from, const std::filesystem::path& to);

// Removes the name `path` (a file; open handles and mappings of it stay valid). 0 or errno.
int RemoveFile(const std::filesystem::path& path);

// Creates the folder `path` (its parent must exist; mode 0755 less the umask). 0 or errno
// (EEXIST when it exists).
int MakeDirectory(const std::filesystem::path& path);

// Whether this process may create and write files in (or write to) `path`.
bool CanWrite(const std::filesystem::path& path);

// Sets `path`'s access and modification times to now (symlinks followed). 0 or errno.
int TouchNow(const std::filesystem::path& path);

// Asks the system to read the whole file into its cache in the background. A hint: failures are
// ignored.
void PrefetchFile(const std::filesystem::path& path);

// An exclusive advisory lock on a lock file: other FileLocks on the same file (in this process
// or another) wait or fail while it is held; plain reads and writes are not stopped. Released by
// the destructor (or when the process dies). Move-only.
class FileLock {
 public:
  enum class Wait { kNo, kYes };

  // Opens `path` (created when missing: 0644, or 0600 with owner_only) and locks it. With
  // Wait::kNo, a lock held elsewhere fails at once with busy(); with Wait::kYes it waits for it
  // (an interrupted wait is retried). The descriptor is close-on-exec: a started child does not
  // inherit the lock.
  FileLock(const std::filesystem::path& path, Wait wait, bool owner_only = false);
  FileLock(FileLock&&) noexcept = default;
  FileLock& operator=(FileLock&&) noexcept = default;
  ~FileLock() = default;  // closing the file releases the lock

  bool held() const { return file_.is_open(); }
  // Another holder has it (Wait::kNo only).
  bool busy() const { return busy_; }
  // 0 when held; else the errno of the open or of the lock (EWOULDBLOCK when busy()).
  int err() const { return err_; }
  // When not held: whether the open failed (else the lock did).
  bool open_failed() const { return open_failed_; }

 private:
  File file_;
  bool busy_ = false;
  bool open_failed_ = false;
  int err_ = 0;
};

// The outcome of a file operation of several steps: `error` is 0 on success, else the errno of
// the step named by `step` ("open", "write", "fsync", "rename").
struct FileStepResult {
  int error = 0;
  const char* step = "";
  bool ok() const { return error == 0; }
};

// Writes `contents` to `target` atomically: into `temp` (created or truncated, owner-only 0600;
// it should be in the target's folder), fsync, then rename over `target`. A reader sees the old
// file or the new one, never a partial one. On failure `temp` is removed and the failing step is
// one of "open", "write", "fsync" (which covers close) and "rename".
FileStepResult WriteFileAtomically(const std::filesystem::path& target,
                                   const std::filesystem::path& temp, std::string_view contents);

// Whether a folder takes a write: creates `probe` (new, 0600), writes `bytes` bytes into it,
// fsyncs, closes and removes it. 0 when all of that worked, else the errno of the first failure
// (ENOSPC for a write that makes no progress): what a full file system, a quota or a read-only
// mount answers.
int ProbeWrite(const std::filesystem::path& probe, size_t bytes);

}  // namespace ebb::platform
