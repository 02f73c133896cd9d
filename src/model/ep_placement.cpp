#include "model/ep_placement.h"

#include <algorithm>
#include <map>

namespace ebb::internal {

NodePlacement ReadEpPlacement(const Ort::Session& session) {
  NodePlacement out;
  try {
    for (const auto& sub : session.GetEpGraphAssignmentInfo()) {
      const std::string ep = sub.GetEpName();
      for (const auto& node : sub.GetNodes()) out.emplace_back(ep, node.GetOperatorType());
    }
  } catch (const Ort::Exception&) {
    out.clear();  // not recorded (session.record_ep_graph_assignment_info unset)
  }
  return out;
}

namespace {

std::string Counted(const std::map<std::string, int>& ops) {
  std::vector<std::pair<std::string, int>> v(ops.begin(), ops.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s;
  for (const auto& [op, n] : v) s += (s.empty() ? "" : ", ") + op + " x" + std::to_string(n);
  return s;
}

}  // namespace

std::string DescribeEpPlacement(const NodePlacement& nodes, const std::string& provider,
                                const std::string& ort_name) {
  if (nodes.empty()) return {};
  int on_device = 0;
  std::map<std::string, std::map<std::string, int>> elsewhere;  // ep -> op -> count
  std::map<std::string, int> elsewhere_nodes;
  for (const auto& [ep, op] : nodes) {
    if (ep == ort_name) {
      ++on_device;
    } else {
      const std::string name = ep == "CPUExecutionProvider" ? "CPU" : ep;
      ++elsewhere[name][op];
      ++elsewhere_nodes[name];
    }
  }
  // ORT 1.30 records every node of the CPU provider but none of WebGPU's: the count of the
  // accelerator's nodes is given only when ORT listed them.
  std::string s = on_device > 0 ? provider + ": " + std::to_string(on_device) + " nodes" : "";
  if (elsewhere.empty())
    return s.empty() ? provider + ": no CPU fallback" : s + ", no CPU fallback";
  for (const auto& [ep, ops] : elsewhere) {
    const int n = elsewhere_nodes[ep];
    s += (s.empty() ? "" : "; ") + ep + " fallback: " + std::to_string(n) +
         (n == 1 ? " node (" : " nodes (") + Counted(ops) + ")";
  }
  return s;
}

}  // namespace ebb::internal
