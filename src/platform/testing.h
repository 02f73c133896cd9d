// platform/testing: fault injection for tests. Makes the next calls of an operation of the
// platform seam fail with a chosen error without calling the operating system, so that the
// failure paths of the code above (an mmap refused, a full disk, an fsync error) can be tested.
// Every implementation of the seam (platform/linux/ and any port) checks these hooks; production
// code never calls FailNext, and an unarmed hook costs one relaxed atomic load.
//
// Thread-safety: process-wide counters, safe from any thread. A test that arms a hook should run
// the failing call on its own thread of control before other code uses the same operation (and
// call ClearFailures when done), since any thread's next call takes the failure.
#pragma once

namespace ebb::platform::testing {

enum class Op {
  kMapAnonymous,  // platform/vm.h MapAnonymous
  kMapFile,       // platform/vm.h MapFileReadOnly
  kOpen,          // platform/file.h File::Open
  kWrite,         // platform/file.h File::WriteAll
  kSync,          // platform/file.h File::Sync, SyncFile, SyncDirectory
  kCount,         // (the number of ops)
};

// The next `count` calls of `op` fail with `err` (an errno code) and do nothing else. Adds to a
// previous arming of the same op (its error is replaced).
void FailNext(Op op, int err, int count = 1);

// The next `skip` calls of `op` run normally, then `count` fail with `err` (a failure deep in a
// sequence: the fourth of a load's mappings, say). Replaces a previous skip of the same op.
void FailAfter(Op op, int skip, int err, int count = 1);

// Disarms every op.
void ClearFailures();

// The armed failures of `op` not yet taken: after a FailAfter(op, n, ...), nonzero when fewer
// than n + 1 calls of `op` ran (a test that refuses each call of a sequence in turn stops there).
int FailuresLeft(Op op);

// Calls ClearFailures when it goes: a test that arms a hook disarms it on every way out.
struct ClearFailuresOnExit {
  ClearFailuresOnExit() = default;
  ClearFailuresOnExit(const ClearFailuresOnExit&) = delete;
  ClearFailuresOnExit& operator=(const ClearFailuresOnExit&) = delete;
  ~ClearFailuresOnExit() { ClearFailures(); }
};

// For implementations of the seam: the error the next call of `op` must fail with (consuming
// one armed failure), or 0 when it runs normally.
int TakeInjectedFailure(Op op);

}  // namespace ebb::platform::testing
