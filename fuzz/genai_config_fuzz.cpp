// libFuzzer target: parses arbitrary text as genai_config.json. Any ebb::Error is an expected
// outcome; crashes, hangs, sanitizer reports or other exceptions (nlohmann's included) are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ebb/error.h"
#include "model/genai_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto cfg = ebb::internal::ParseGenaiConfig(text, "/fuzz/genai_config.json");
    (void)ebb::internal::LayerName(cfg.io.past_key, 3);
  } catch (const ebb::Error&) {
  }
  return 0;
}
