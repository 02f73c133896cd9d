// Initialises the ONNX Runtime C++ API (ebb builds with ORT_API_MANUAL_INIT so that a too-old
// libonnxruntime gives a clear error instead of a null-pointer crash).
#pragma once

namespace ebb::internal {

// The API is initialised when libebb loads; call this before the first Ort:: object of a
// public entry point. Cheap and thread-safe. Throws ebb::Error(Unavailable) naming the loaded ORT
// version and the required API level when the loaded library is older than the headers ebb was
// built with.
void EnsureOrtApi();

}  // namespace ebb::internal
