// One execution provider and its key/value options, as a model config lists them. A plain
// struct, apart from session_options.h, so that config parsing needs no ONNX Runtime headers.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ebb::internal {

struct ProviderOptions {
  std::string name;  // e.g. "cuda", "dml"
  std::vector<std::pair<std::string, std::string>> options;
};

}  // namespace ebb::internal
