#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::internal {
namespace {

std::string Quote(const std::filesystem::path& path) {
  return EscapeForMessage(path.string(), 1024);
}

[[noreturn]] void ThrowErrno(int err, const std::filesystem::path& path, std::string_view what,
                             std::string_view doing) {
  const std::string head = std::string(what) + " (" + Quote(path) + "): ";
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      throw Error(ErrorCode::NotFound, head + "no such file");
    case EACCES:
    case EPERM:
      throw Error(ErrorCode::FailedPrecondition,
                  head + "permission denied (check the file's and its folders' permissions)");
    case ELOOP:
      throw Error(ErrorCode::InvalidArgument,
                  head + "symlink loop (too many levels of symbolic links)");
    case EISDIR:
      throw Error(ErrorCode::InvalidArgument, head + "is a directory, not a file");
    case ENAMETOOLONG:
      throw Error(ErrorCode::InvalidArgument, head + "path too long");
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      throw Error(ErrorCode::ResourceExhausted,
                  head + "cannot " + std::string(doing) + ": " + DescribeErrno(err));
    default:
      throw Error(ErrorCode::Internal,
                  head + "cannot " + std::string(doing) + ": " + DescribeErrno(err));
  }
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Opens without blocking (a FIFO with no writer would block open()), then checks the type.
uint64_t OpenRegular(const std::filesystem::path& path, std::string_view what, Fd& out) {
  out.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (out.fd < 0) ThrowErrno(errno, path, what, "open it");
  struct stat st {};
  if (fstat(out.fd, &st) != 0) ThrowErrno(errno, path, what, "stat it");
  if (!S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + " (" + Quote(path) + ") is " +
                                                KindOf(st.st_mode) + ", not a regular file");
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

std::string DescribeErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return "permission denied";
    case ELOOP:
      return "symlink loop (too many levels of symbolic links)";
    default:
      return std::strerror(err);
  }
}

std::string ReadRegularFile(const std::filesystem::path& path, uint64_t max_bytes,
                            std::string_view what) {
  Fd f;
  const uint64_t size = OpenRegular(path, what, f);
  if (size > max_bytes) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + " (" + Quote(path) + ") is " +
                                                FormatBytes(size) + ", more than ebb's limit of " +
                                                FormatBytes(max_bytes) + " for this file");
  }
  // Clear O_NONBLOCK for the reads (a regular file ignores it, but be plain).
  fcntl(f.fd, F_SETFL, fcntl(f.fd, F_GETFL) & ~O_NONBLOCK);
  std::string out;
  out.resize(static_cast<size_t>(size));
  size_t got = 0;
  // Reads at most max_bytes even if the file grows meanwhile.
  while (true) {
    if (got == out.size()) {
      if (out.size() >= max_bytes) break;
      out.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, out.size() + 65536)));
    }
    const ssize_t n = read(f.fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowErrno(errno, path, what, "read it");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

uint64_t CheckRegularFile(const std::filesystem::path& path, std::string_view what) {
  Fd f;
  return OpenRegular(path, what, f);
}

bool FileExists(const std::filesystem::path& path, std::string_view what) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  ThrowErrno(errno, path, what, "stat it");
}

}  // namespace ebb::internal
