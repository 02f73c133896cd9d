// ebb/export.h — EBB_API marks what libebb exports. libebb is built with hidden visibility
// (-fvisibility=hidden), so a symbol without EBB_API stays private to the library: the shared
// library's dynamic symbol table is the public API and nothing else (checked by a test).
#pragma once

#if defined(_WIN32)
#define EBB_API
#else
#define EBB_API __attribute__((visibility("default")))
#endif
