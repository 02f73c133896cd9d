// The parsers of platform/linux/proc_text.h.
#include "platform/linux/proc_text.h"

#include <fstream>
#include <sstream>

namespace ebb::platform::linux_text {

std::optional<std::string> ReadKernelText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> ParseCpuFlags(std::string_view cpuinfo) {
  std::istringstream in{std::string(cpuinfo)};
  std::string line;
  std::set<std::string> have;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    for (std::string w; words >> w;) have.insert(w);
    break;  // the first CPU's: MLAS assumes every core has the same features
  }
  return have;
}

std::optional<std::string> ParseCpuModelName(std::string_view cpuinfo) {
  std::istringstream in{std::string(cpuinfo)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseStatStartTime(std::string_view stat) {
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream rest{std::string(stat.substr(close + 1))};
  std::vector<std::string> f;  // f[0] is field 3 (state), so field 22 (starttime) is f[19]
  for (std::string w; rest >> w;) f.push_back(w);
  if (f.size() < 20) return std::nullopt;
  if (f[0] == "Z" || f[0] == "X") return std::nullopt;  // exited; not yet reaped
  try {
    return std::stoull(f[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> SplitNulSeparated(std::string_view raw) {
  std::vector<std::string> out;
  for (size_t i = 0; i < raw.size();) {
    const size_t end = raw.find('\0', i);
    out.emplace_back(
        raw.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return out;
}

std::vector<std::string> ListeningInodes(std::string_view table, int port) {
  std::vector<std::string> inodes;
  std::istringstream in{std::string(table)};
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
    if (!(row >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >>
          inode)) {
      continue;
    }
    const auto colon = local.rfind(':');
    if (colon == std::string::npos || st != "0A") continue;
    try {
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) inodes.push_back(inode);
    } catch (const std::exception&) {
    }
  }
  return inodes;
}

}  // namespace ebb::platform::linux_text
