#include "cli/port_probe.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "cli/service_names.h"
#include "core/files.h"

namespace ebb::cli {
namespace {

// Socket inodes of listening sockets on `port` in one /proc/net/tcp-format table. Columns:
// sl local_address(hex ip:hex port) rem_address st(0A = LISTEN) ... uid timeout inode.
std::vector<std::string> ListeningInodes(const char* table, int port) {
  std::vector<std::string> inodes;
  std::ifstream in(table);
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

}  // namespace

std::string ProbeListen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    return std::string("cannot resolve host '") + host + "': " + gai_strerror(rc);
  }
  std::string reason = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      reason = internal::DescribeErrno(errno);
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    const bool ok = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    const int err = errno;
    ::close(fd);
    if (ok) {
      freeaddrinfo(res);
      return "";
    }
    reason = err == EADDRINUSE ? "address already in use" : internal::DescribeErrno(err);
  }
  freeaddrinfo(res);
  return reason;
}

std::optional<PortListener> FindPortListener(int port) {
  std::vector<std::string> inodes = ListeningInodes("/proc/net/tcp", port);
  for (auto& i : ListeningInodes("/proc/net/tcp6", port)) inodes.push_back(i);
  if (inodes.empty()) return std::nullopt;
  std::vector<std::string> links;
  for (const auto& i : inodes) links.push_back("socket:[" + i + "]");
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return PortListener{};
  std::optional<PortListener> found;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string fd_dir = std::string("/proc/") + e->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // another user's process
    while (dirent* f = ::readdir(fds)) {
      char target[128];
      const std::string path = fd_dir + "/" + f->d_name;
      const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      for (const auto& l : links) {
        if (l == target) found = PortListener{static_cast<int>(pid), ProcessName(pid)};
      }
      if (found) break;
    }
    ::closedir(fds);
    if (found) break;
  }
  ::closedir(proc);
  return found ? found : PortListener{};
}

std::string DescribePortProblem(const std::string& host, int port, const std::string& reason) {
  const std::string where = "port " + std::to_string(port) + " on " + host;
  if (reason != "address already in use") return where + " is not available: " + reason;
  const auto who = FindPortListener(port);
  if (who && who->pid > 0) {
    return where + " is in use by pid " + std::to_string(who->pid) + " (" +
           (who->name.empty() ? "unknown" : who->name) + ")";
  }
  return where + " is in use by another program (its process is not visible here)";
}

}  // namespace ebb::cli
