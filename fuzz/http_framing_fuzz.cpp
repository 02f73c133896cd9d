// Differential fuzzing of the service's request framing (issue 39): the same bytes go to ebb's
// framing parser (src/server/http_framing.h), which the event-loop front runs, and to httplib's
// request parser, which runs the handlers. Any request the front accepts must mean the same to
// httplib (tests/unit/httplib_differential.h); a disagreement is a smuggling shape and traps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "../tests/unit/httplib_differential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const ebb::server::FramingLimits limits{64u << 10, 1u << 20};
  const std::string d = ebb::testing::Disagreement(bytes, limits);
  if (!d.empty()) {
    std::fprintf(stderr, "framing disagreement: %s\n", d.c_str());
    __builtin_trap();
  }
  return 0;
}
