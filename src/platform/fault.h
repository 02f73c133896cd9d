// platform/fault: a process-wide handler for faults on reads of mapped files past their end
// (Linux SIGBUS: a mapped file was truncated or went away). Part of the platform seam (band 0,
// docs/architecture.md "The platform seam"): the only folder that calls the operating system
// directly. memory/mapped_file_guard.h keeps the table of protected ranges; this file is only the
// mechanics of the signal.
//
// Contract: InstallFileFaultHandler installs `handler` once per process (thread-safe; later calls
// return the first call's result and do not replace it). The handler runs in signal context for
// each fault the kernel raises for an access (not for a signal sent with kill()), on the
// faulting thread, with the faulting address: it must be async-signal-safe (atomics, and
// platform/vm.h's MapZerosOver), must not throw, and returns true when it made the address
// readable (the access is then retried) or false to pass the fault on. A fault passed on (and a
// signal sent with kill()) goes to the handler that was installed before: called as it asked to
// be, or, when that was the default action or "ignore", the default action happens (a core dump
// of the real fault). errno is preserved across the handler. A handler that other code installs
// later replaces this one; it must chain to it for faults to keep being absorbed.
#pragma once

#include <cstdint>

namespace ebb::platform {

using FileFaultHandler = bool (*)(uintptr_t fault_address);

// Installs `handler` (above). Returns 0 or the errno of the failed installation.
int InstallFileFaultHandler(FileFaultHandler handler);

}  // namespace ebb::platform
