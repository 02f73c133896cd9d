// Memory pages: the size the kernel maps and accounts in, and sizes rounded up to it. One
// definition for the KV pool, the prefix cache and the batched-decode region, which all charge
// budgets in whole pages (what the kernel actually commits).
#pragma once

#include <cstdint>

namespace ebb::internal {

// The system page size in bytes (platform::PageSize: read once; 4096 if it cannot be read).
uint64_t PageSize();

// `bytes` rounded up to a whole number of pages.
uint64_t PageRound(uint64_t bytes);

}  // namespace ebb::internal
