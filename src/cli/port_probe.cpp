#include "cli/port_probe.h"

#include <cerrno>

#include "cli/service_names.h"
#include "core/files.h"
#include "platform/net.h"
#include "platform/process.h"

namespace ebb::cli {

std::string ProbeListen(const std::string& host, int port) {
  const platform::ListenProbe p = platform::ProbeListen(host, port);
  if (p.ok) return "";
  if (!p.resolve_error.empty()) {
    return std::string("cannot resolve host '") + host + "': " + p.resolve_error;
  }
  if (p.error == 0) return "no address";
  return p.error == EADDRINUSE ? "address already in use" : internal::DescribeErrno(p.error);
}

std::optional<PortListener> FindPortListener(int port) {
  const std::optional<int64_t> pid = platform::FindTcpListener(port);
  if (!pid) return std::nullopt;
  if (*pid <= 0) return PortListener{};
  return PortListener{static_cast<int>(*pid), ProcessName(static_cast<int>(*pid))};
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
