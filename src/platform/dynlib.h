// platform/dynlib: libraries opened at run time (a driver's library that may be absent: NVML,
// the Vulkan loader). Part of the platform seam (band 0, docs/architecture.md "The platform
// seam"). Nothing here throws.
#pragma once

#include <string>

namespace ebb::platform {

// Opens the shared library `name` (a file name searched the system's way, or a path), resolving
// every symbol now and keeping them out of the global namespace. Returns its handle, or nullptr
// with `*error` set to the system's reason ("" when it gives none). Each successful open is one
// reference, released by CloseLibrary.
void* OpenLibrary(const std::string& name, std::string* error);

// The address of the symbol `name` in `library`, nullptr when it has none.
void* LibrarySymbol(void* library, const char* name);

// The file the system loaded `library` from (the path its search found); "" when unknown.
std::string LibraryPath(void* library);

// Releases one reference of OpenLibrary. nullptr is ignored.
void CloseLibrary(void* library);

}  // namespace ebb::platform
