#include "cli/input_files.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/strings.h"
#include "ebb/error.h"

namespace ebb::cli {

std::string ReadInputFile(const std::string& path, std::string_view flag) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::NotFound, std::string(flag) + ": cannot open " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<int32_t>> ParseIdRows(std::string_view text, std::string_view flag) {
  std::string normalized(text);
  for (char& c : normalized) {
    if (c == '\n' || c == '\r') c = ';';
    if (c == ' ' || c == '\t') c = ',';
  }
  std::vector<std::vector<int32_t>> rows;
  for (const std::string& group : internal::Split(normalized, ';')) {
    std::string ids;  // drop empty items left by runs of separators
    for (const std::string& item : internal::Split(group, ',')) {
      if (internal::Trim(item).empty()) continue;
      if (!ids.empty()) ids += ',';  // not "," + string: GCC 12's -Wrestrict misfires at -O2
      ids += internal::Trim(item);
    }
    if (ids.empty()) continue;
    rows.push_back(internal::ParseIntList(ids, flag));
  }
  if (rows.empty()) {
    throw Error(ErrorCode::InvalidArgument, std::string(flag) + ": no token ids given");
  }
  return rows;
}

}  // namespace ebb::cli
