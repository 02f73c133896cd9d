#include "model/proto_wire.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ebb::internal::proto {

Mapping::Mapping(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Malformed{"cannot open the file"};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    throw Malformed{"empty or unreadable file"};
  }
  size_ = static_cast<uint64_t>(st.st_size);
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw Malformed{"cannot map the file"};
  data_ = static_cast<const uint8_t*>(p);
}

Mapping::~Mapping() { ::munmap(const_cast<uint8_t*>(data_), size_); }

bool WriteAll(int fd, const uint8_t* p, uint64_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<uint64_t>(n, 1u << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return true;
}

bool WriteAll(int fd, std::string_view s) {
  return WriteAll(fd, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace ebb::internal::proto
