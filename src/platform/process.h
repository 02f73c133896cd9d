// platform/process: this process and others, by pid. Part of the platform seam (band 0,
// docs/architecture.md "The platform seam"): the only folder that calls the operating system
// directly. Nothing here throws; failures are reported as values (errno-style codes or
// std::nullopt) for the caller to turn into an ebb::Error.
#pragma once

#include <cstdint>

namespace ebb::platform {

// This process's id.
int64_t CurrentPid();

// Whether a process with this pid exists (it may belong to another user). False for pid <= 0.
bool ProcessAlive(int64_t pid);

}  // namespace ebb::platform
