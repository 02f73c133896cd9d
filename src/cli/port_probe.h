// Whether a TCP port can be listened on, and which process listens on it when it cannot: what
// `ebb service start` checks before it starts a service, so that "the port is taken" names the
// port and (where /proc shows it) the program holding it.
#pragma once

#include <optional>
#include <string>

namespace ebb::cli {

// The process that listens on a TCP port, as /proc shows it.
struct PortListener {
  int pid = 0;       // 0: the socket is visible in /proc/net/tcp* but not its process (another
                     // user's, or in another namespace)
  std::string name;  // /proc/PID/comm
};

// Whether this process could listen on host:port now: binds a socket with SO_REUSEADDR (as
// ebb serve does) and closes it. `host` is an address or a name (resolved with getaddrinfo).
// Returns "" when it could, else the reason ("address already in use", "cannot resolve host").
std::string ProbeListen(const std::string& host, int port);

// The listener on `port` (any local address, IPv4 or IPv6) from /proc/net/tcp{,6} and the
// socket links under /proc/*/fd; nullopt when no listening socket on that port is visible.
std::optional<PortListener> FindPortListener(int port);

// "port 11435 is in use by pid 1234 (python3)" / "... by another program (its process is not
// visible)" / "port 11435 is not available: <reason>", for messages.
std::string DescribePortProblem(const std::string& host, int port, const std::string& reason);

}  // namespace ebb::cli
