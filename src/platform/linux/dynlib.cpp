// Linux implementation of platform/dynlib.h: dlopen, dlsym, dlclose.
#include "platform/dynlib.h"

#include <dlfcn.h>
#include <link.h>

namespace ebb::platform {

void* OpenLibrary(const std::string& name, std::string* error) {
  dlerror();  // clear a stale message
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr && error != nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : "";
  }
  return lib;
}

void* LibrarySymbol(void* library, const char* name) { return dlsym(library, name); }

std::string LibraryPath(void* library) {
  link_map* map = nullptr;
  if (dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    return map->l_name;
  }
  return {};
}

void CloseLibrary(void* library) {
  if (library != nullptr) dlclose(library);
}

}  // namespace ebb::platform
