// Inputs the CLI reads from a file or stdin, so that prompts of any size never pass through
// argv (whose total size the OS limits, and which `ps` shows to every user).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::cli {

// The whole content of `path`, or of stdin when `path` is "-". Throws ebb::Error: NotFound when
// the file cannot be opened (the message names `flag`).
std::string ReadInputFile(const std::string& path, std::string_view flag);

// Token id rows: rows separated by ';' or newlines, ids by ',' or blanks ("1,2,3;4 5\n6").
// Blank rows are skipped. Throws ebb::Error(InvalidArgument) naming `flag`.
std::vector<std::vector<int32_t>> ParseIdRows(std::string_view text, std::string_view flag);

}  // namespace ebb::cli
