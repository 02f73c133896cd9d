// libFuzzer target: the CLI's option parsing helpers on arbitrary text: KEY=VALUE splitting and
// ModelOptions::Set (which parses byte sizes, integers, booleans and KV modes), ParseByteSize
// and internal::ParseIntList. Any ebb::Error is an expected outcome; crashes, sanitizer reports
// (overflow included: UBSan) or other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/options_flags.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ebb::ParseByteSize(text, "fuzz");
  } catch (const ebb::Error&) {
  }
  try {
    (void)ebb::internal::ParseIntList(text, "fuzz");
  } catch (const ebb::Error&) {
  }
  try {
    const auto [key, value] = ebb::cli::SplitKeyValue(text, "--option");
    ebb::ModelOptions o;
    o.Set(key, value);
  } catch (const ebb::Error&) {
  }
  return 0;
}
