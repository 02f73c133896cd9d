#include "core/pages.h"

#include <unistd.h>

namespace ebb::internal {

uint64_t PageSize() {
  static const uint64_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

uint64_t PageRound(uint64_t bytes) {
  const uint64_t page = PageSize();
  return (bytes + page - 1) / page * page;
}

}  // namespace ebb::internal
