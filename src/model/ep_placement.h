// Where ORT placed a session's nodes, as one line for people: which execution provider runs
// each node once the graph is partitioned, and every operator that fell back to the CPU.
// Read with ORT's Session::GetEpGraphAssignmentInfo (the session must be created with
// session.record_ep_graph_assignment_info=1; ORT records it after its basic optimisations),
// because a model running on a GPU provider with some nodes on the CPU moves tensors between
// host and device at every such node: the line says which.
// Thread-safety: pure functions (ReadEpPlacement reads a session, which ORT allows from any
// thread).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>
#include <utility>
#include <vector>

namespace ebb::internal {

// (execution provider name as ORT gives it, op type) per node.
using NodePlacement = std::vector<std::pair<std::string, std::string>>;

// The placement recorded in `session`; empty when ORT recorded none (the option was not set).
NodePlacement ReadEpPlacement(const Ort::Session& session);

// "CPU fallback: 5 nodes (Shape x3, Gather x2)" (op types by count, then name), preceded by
// "webgpu: 58 nodes; " when ORT listed the accelerator's nodes (ORT 1.30 lists the CPU
// provider's only), or "webgpu: no CPU fallback". `provider` is ebb's short name for the
// accelerator ("webgpu"), `ort_name` ORT's ("WebGpuExecutionProvider"). Nodes of another
// provider are listed under its ORT name.
std::string DescribeEpPlacement(const NodePlacement& nodes, const std::string& provider,
                                const std::string& ort_name);

}  // namespace ebb::internal
