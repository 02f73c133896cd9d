// platform/thread: properties of the calling thread. Part of the platform seam (band 0,
// docs/architecture.md "The platform seam"): the only folder that calls the operating system
// directly. Nothing here throws; failures are reported as errno-style codes.
#pragma once

namespace ebb::platform {

// Gives the calling thread (not the whole process) the lowest CPU priority (Linux: nice 19 for
// this thread's id), so that it runs on what other threads leave. Returns 0 or an errno code.
int LowerThreadPriority();

}  // namespace ebb::platform
