#include "core/pages.h"

#include "platform/vm.h"

namespace ebb::internal {

uint64_t PageSize() { return platform::PageSize(); }

uint64_t PageRound(uint64_t bytes) {
  const uint64_t page = PageSize();
  return (bytes + page - 1) / page * page;
}

}  // namespace ebb::internal
