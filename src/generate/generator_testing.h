// Test-only hooks into the generator. Not part of the public API (include/ebb/).
#pragma once

namespace ebb::internal {

// Makes the n-th ONNX Runtime Run() from now on the calling thread (1 = the next one) throw
// ebb::Error(Internal) instead of running, as a failed Run() would. 0 disarms. Thread-local:
// other threads' generators are unaffected.
void FailNthRunForTesting(int n);

}  // namespace ebb::internal
