// Linux implementation of platform/file.h.
#include "platform/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "platform/testing.h"

namespace ebb::platform {
namespace {

FileType TypeOf(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kRegular;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISFIFO(mode)) return FileType::kFifo;
  if (S_ISCHR(mode)) return FileType::kCharDevice;
  if (S_ISBLK(mode)) return FileType::kBlockDevice;
  if (S_ISSOCK(mode)) return FileType::kSocket;
  return FileType::kOther;
}

void Fill(const struct stat& st, FileInfo* out) {
  out->type = TypeOf(st.st_mode);
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out->device = static_cast<uint64_t>(st.st_dev);
  out->inode = static_cast<uint64_t>(st.st_ino);
}

int OpenFd(const std::filesystem::path& path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int SyncPath(const std::filesystem::path& path, bool directory) {
  if (const int err = testing::TakeInjectedFailure(testing::Op::kSync); err != 0) return err;
  const int fd = OpenFd(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return errno;
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

int StatPath(const std::filesystem::path& path, FileInfo* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  Fill(st, out);
  return 0;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File::File(File&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

File File::Open(const std::filesystem::path& path, OpenMode mode, int* err) {
  if (const int injected = testing::TakeInjectedFailure(testing::Op::kOpen); injected != 0) {
    *err = injected;
    return File();
  }
  int fd = -1;
  switch (mode) {
    case OpenMode::kRead:
      fd = OpenFd(path, O_RDONLY);
      break;
    case OpenMode::kReadNonBlocking:
      fd = OpenFd(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
      break;
    case OpenMode::kWriteTruncate:
      fd = OpenFd(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      break;
    case OpenMode::kReadWriteCreate:
      fd = OpenFd(path, O_RDWR | O_CREAT, 0644);
      break;
    case OpenMode::kWriteTruncatePrivate:
      fd = OpenFd(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      break;
    case OpenMode::kReadWriteCreatePrivate:
      fd = OpenFd(path, O_RDWR | O_CREAT, 0600);
      break;
    case OpenMode::kCreateNewPrivate:
      fd = OpenFd(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
      break;
  }
  *err = fd < 0 ? errno : 0;
  return File(fd);
}

File File::CreateInMemory(const char* name, int* err) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  *err = fd < 0 ? errno : 0;
  return File(fd);
}

int File::Close() {
  if (fd_ < 0) return EBADF;
  const int r = ::close(fd_);  // not retried on EINTR: Linux has closed the descriptor then
  fd_ = -1;
  return r == 0 ? 0 : errno;
}

int File::Stat(FileInfo* out) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return errno;
  Fill(st, out);
  return 0;
}

void File::SetBlocking() { ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK); }

IoResult File::Read(void* buf, uint64_t n) {
  IoResult r;
  ssize_t got;
  do {
    got = ::read(fd_, buf, n);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    r.err = errno;
  } else {
    r.bytes = static_cast<uint64_t>(got);
  }
  return r;
}

IoResult File::ReadAt(void* buf, uint64_t n, uint64_t offset) {
  IoResult r;
  ssize_t got;
  do {
    got = ::pread(fd_, buf, n, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    r.err = errno;
  } else {
    r.bytes = static_cast<uint64_t>(got);
  }
  return r;
}

int File::WriteAll(const void* data, uint64_t n) {
  if (const int err = testing::TakeInjectedFailure(testing::Op::kWrite); err != 0) return err;
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, std::min<uint64_t>(n, 1u << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;  // a write that makes no progress
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return 0;
}

int File::Sync() {
  if (const int err = testing::TakeInjectedFailure(testing::Op::kSync); err != 0) return err;
  return ::fsync(fd_) == 0 ? 0 : errno;
}

std::filesystem::path File::OpenablePath() const {
  if (fd_ < 0) return {};
  return "/proc/self/fd/" + std::to_string(fd_);
}

int SyncFile(const std::filesystem::path& path) { return SyncPath(path, false); }

int SyncDirectory(const std::filesystem::path& path) { return SyncPath(path, true); }

int Rename(const std::filesystem::path& from, const std::filesystem::path& to) {
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int RemoveFile(const std::filesystem::path& path) {
  return ::unlink(path.c_str()) == 0 ? 0 : errno;
}

int MakeDirectory(const std::filesystem::path& path) {
  return ::mkdir(path.c_str(), 0755) == 0 ? 0 : errno;
}

bool CanWrite(const std::filesystem::path& path) { return ::access(path.c_str(), W_OK) == 0; }

int TouchNow(const std::filesystem::path& path) {
  return ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0 ? 0 : errno;
}

void PrefetchFile(const std::filesystem::path& path) {
  const int fd = OpenFd(path, O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);  // a hint; failure costs nothing
  ::close(fd);
}

FileLock::FileLock(const std::filesystem::path& path, Wait wait, bool owner_only) {
  file_ = File::Open(
      path, owner_only ? OpenMode::kReadWriteCreatePrivate : OpenMode::kReadWriteCreate, &err_);
  if (!file_.is_open()) {
    open_failed_ = true;
    return;
  }
  int r;
  do {
    r = ::flock(file_.native_handle(), LOCK_EX | (wait == Wait::kNo ? LOCK_NB : 0));
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    err_ = errno;
    busy_ = err_ == EWOULDBLOCK;
    file_.Close();
  }
}

FileStepResult WriteFileAtomically(const std::filesystem::path& target,
                                   const std::filesystem::path& temp, std::string_view contents) {
  auto fail = [&](const char* step, int err) {
    ::unlink(temp.c_str());
    return FileStepResult{err, step};
  };
  int err = 0;
  File f = File::Open(temp, OpenMode::kWriteTruncatePrivate, &err);
  if (!f.is_open()) return fail("open", err);
  if ((err = f.WriteAll(contents)) != 0) return fail("write", err);
  if ((err = f.Sync()) != 0 || (err = f.Close()) != 0) return fail("fsync", err);
  // rename() replaces atomically: a reader sees the old file or the new one, never a partial one.
  if (::rename(temp.c_str(), target.c_str()) != 0) return fail("rename", errno);
  return {};
}

int ProbeWrite(const std::filesystem::path& probe, size_t bytes) {
  int err = 0;
  File f = File::Open(probe, OpenMode::kCreateNewPrivate, &err);
  if (!f.is_open()) return err;
  err = f.WriteAll(std::string(bytes, '\n'));
  if (err == 0) err = f.Sync();
  f.Close();
  ::unlink(probe.c_str());
  return err;
}

}  // namespace ebb::platform
