// Linux implementation of platform/atomic_file.h.
#include "platform/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace ebb::platform {

FileStepResult WriteFileAtomically(const std::filesystem::path& target,
                                   const std::filesystem::path& temp, std::string_view contents) {
  auto fail = [&](const char* step, int err) {
    ::unlink(temp.c_str());
    return FileStepResult{err, step};
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("open", errno);
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return fail("write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("fsync", err);
  }
  if (::close(fd) != 0) return fail("fsync", errno);
  // rename() replaces atomically: a reader sees the old file or the new one, never a partial one.
  if (::rename(temp.c_str(), target.c_str()) != 0) return fail("rename", errno);
  return {};
}

ExclusiveFileLock::~ExclusiveFileLock() { Release(); }

ExclusiveFileLock::ExclusiveFileLock(ExclusiveFileLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

ExclusiveFileLock& ExclusiveFileLock::operator=(ExclusiveFileLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void ExclusiveFileLock::Release() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  fd_ = -1;
}

FileStepResult ExclusiveFileLock::Lock(const std::filesystem::path& file) {
  Release();
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return {errno, "open"};
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return {err, "lock"};
    }
  }
  fd_ = fd;
  return {};
}

int ProbeWrite(const std::filesystem::path& probe, size_t bytes) {
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = 0;
  const std::string block(bytes, '\n');
  size_t done = 0;
  while (done < block.size() && err == 0) {
    const ssize_t n = ::write(fd, block.data() + done, block.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      err = errno;
    } else if (n == 0) {
      err = ENOSPC;  // a write that makes no progress
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return err;
}

bool MayWrite(const std::filesystem::path& dir) { return ::access(dir.c_str(), W_OK) == 0; }

}  // namespace ebb::platform
