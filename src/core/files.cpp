#include "core/files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/strings.h"
#include "ebb/error.h"
#include "platform/file.h"

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

const char* KindOf(platform::FileType type) {
  switch (type) {
    case platform::FileType::kDirectory:
      return "a directory";
    case platform::FileType::kFifo:
      return "a FIFO (named pipe)";
    case platform::FileType::kCharDevice:
      return "a character device";
    case platform::FileType::kBlockDevice:
      return "a block device";
    case platform::FileType::kSocket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// Opens without blocking (a FIFO with no writer would block open()), then checks the type.
uint64_t OpenRegular(const std::filesystem::path& path, std::string_view what,
                     platform::File& out) {
  int err = 0;
  out = platform::File::Open(path, platform::OpenMode::kReadNonBlocking, &err);
  if (!out.is_open()) ThrowErrno(err, path, what, "open it");
  platform::FileInfo info;
  if (const int stat_err = out.Stat(&info); stat_err != 0)
    ThrowErrno(stat_err, path, what, "stat it");
  if (info.type != platform::FileType::kRegular) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + " (" + Quote(path) + ") is " +
                                                KindOf(info.type) + ", not a regular file");
  }
  return info.size;
}

}  // namespace

bool IsResourceErrno(int err) {
  return err == ENOMEM || err == EMFILE || err == ENFILE || err == EAGAIN;
}

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
  platform::File f;
  const uint64_t size = OpenRegular(path, what, f);
  if (size > max_bytes) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + " (" + Quote(path) + ") is " +
                                                FormatBytes(size) + ", more than ebb's limit of " +
                                                FormatBytes(max_bytes) + " for this file");
  }
  // Clear O_NONBLOCK for the reads (a regular file ignores it, but be plain).
  f.SetBlocking();
  std::string out;
  out.resize(static_cast<size_t>(size));
  size_t got = 0;
  // Reads at most max_bytes even if the file grows meanwhile.
  while (true) {
    if (got == out.size()) {
      if (out.size() >= max_bytes) break;
      out.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes, out.size() + 65536)));
    }
    const platform::IoResult r = f.Read(out.data() + got, out.size() - got);  // EINTR retried
    if (r.err != 0) ThrowErrno(r.err, path, what, "read it");
    if (r.bytes == 0) break;
    got += static_cast<size_t>(r.bytes);
  }
  out.resize(got);
  return out;
}

uint64_t CheckRegularFile(const std::filesystem::path& path, std::string_view what) {
  platform::File f;
  return OpenRegular(path, what, f);
}

bool FileExists(const std::filesystem::path& path, std::string_view what) {
  platform::FileInfo info;
  const int err = platform::StatPath(path, &info);
  if (err == 0) return true;
  if (err == ENOENT || err == ENOTDIR) return false;
  ThrowErrno(err, path, what, "stat it");
}

}  // namespace ebb::internal
