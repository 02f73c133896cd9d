#include "model/cpu_ops_rewrite.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <utility>

#include "cpu_ops/cpu_ops.h"
#include "model/proto_wire.h"
#include "ort/cpu_kernels.h"

namespace ebb::internal {
namespace {

using proto::ForEachField;
using proto::kLen;
using proto::kVarint;
using proto::Malformed;
using proto::Mapping;
using proto::PutInt;
using proto::PutLen;
using proto::PutTag;
using proto::PutVarint;
using proto::Span;

using namespace proto::onnx;  // the field numbers (proto_wire.h)

constexpr const char* kMsDomain = "com.microsoft";
constexpr const char* kEbbDomain = kCpuOpsDomain;
static_assert(std::string_view(kCpuOpsDomain) == ebb_cpu_ops::kDomain);
constexpr int kHeadSizes[] = {16, 32, 48, 64, 96, 128};  // gqa_kernels.h

struct Node {
  uint64_t entry_begin = 0, entry_end = 0;      // the graph's node field, tag included
  uint64_t payload_begin = 0, payload_end = 0;  // the NodeProto
  std::string name, op_type, domain;
  std::vector<std::string> inputs;
  std::map<std::string, int64_t> ints;  // the node's integer attributes
};

// The graph's parts the plan reads, with the byte ranges the rewrite needs.
struct Graph {
  uint64_t tag_begin = 0, begin = 0, end = 0;  // ModelProto.graph: its tag, its payload
  std::vector<Node> nodes;
  std::map<std::string, uint64_t> initializer_types;  // name -> TensorProto.data_type
  std::map<std::string, uint64_t> input_types;        // graph input name -> elem_type
};

Graph ReadGraph(Span& s) {
  Graph g;
  int graphs = 0;
  ForEachField(s, 0, s.size(), [&](uint64_t field, int wt, uint64_t tag_begin, auto value) {
    if (field != kModelGraph || wt != kLen) return;
    ++graphs;
    g.tag_begin = tag_begin;
    g.begin = value.first;
    g.end = value.second;
  });
  if (graphs != 1) throw Malformed{"expected one graph, found " + std::to_string(graphs)};
  ForEachField(s, g.begin, g.end, [&](uint64_t field, int wt, uint64_t tag_begin, auto value) {
    // ForEachField restores the cursor after each callback, so the nested walks need no care.
    if (wt != kLen) return;
    if (field == kGraphNode) {
      Node n;
      n.entry_begin = tag_begin;
      n.entry_end = value.second;
      n.payload_begin = value.first;
      n.payload_end = value.second;
      ForEachField(s, value.first, value.second, [&](uint64_t f, int w, uint64_t, auto v) {
        if (w != kLen) return;
        if (f == kNodeInput) n.inputs.emplace_back(s.Str(v));
        if (f == kNodeName) n.name = s.Str(v);
        if (f == kNodeOpType) n.op_type = s.Str(v);
        if (f == kNodeDomain) n.domain = s.Str(v);
        if (f == kNodeAttribute) {
          std::string name;
          int64_t i = 0;
          bool has_int = false;
          ForEachField(s, v.first, v.second, [&](uint64_t af, int aw, uint64_t, auto av) {
            if (af == kAttrName && aw == kLen) name = s.Str(av);
            if (af == kAttrInt && aw == kVarint) {
              i = static_cast<int64_t>(s.VarintIn(av));  // int64 in two's complement
              has_int = true;
            }
          });
          if (has_int && !name.empty()) n.ints[name] = i;
        }
      });
      g.nodes.push_back(std::move(n));
    } else if (field == kGraphInitializer) {
      std::string name;
      uint64_t type = 0;
      ForEachField(s, value.first, value.second, [&](uint64_t f, int w, uint64_t, auto v) {
        if (f == kTensorName && w == kLen) name = s.Str(v);
        if (f == kTensorDataType && w == kVarint) type = s.VarintIn(v);
      });
      if (!name.empty()) g.initializer_types[name] = type;
    } else if (field == kGraphInput) {
      std::string name;
      uint64_t elem = 0;
      ForEachField(s, value.first, value.second, [&](uint64_t f, int w, uint64_t, auto v) {
        if (f == kValueInfoName && w == kLen) name = s.Str(v);
        if (f != kValueInfoType || w != kLen) return;
        ForEachField(s, v.first, v.second, [&](uint64_t tf, int tw, uint64_t, auto tv) {
          if (tf != kTypeTensor || tw != kLen) return;
          ForEachField(s, tv.first, tv.second, [&](uint64_t ef, int ew, uint64_t, auto ev) {
            if (ef == kTensorElemType && ew == kVarint) elem = s.VarintIn(ev);
          });
        });
      });
      if (!name.empty()) g.input_types[name] = elem;
    }
  });
  return g;
}

int64_t IntAttr(const Node& n, const char* name, int64_t fallback) {
  auto it = n.ints.find(name);
  return it == n.ints.end() ? fallback : it->second;
}

// Why `n` stays where it is; "" when it moves.
std::string WhyLeft(const Node& n, const Graph& g, int head_size) {
  auto initializer = [&](size_t i, uint64_t* type) {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return false;
    auto it = g.initializer_types.find(n.inputs[i]);
    if (it == g.initializer_types.end()) return false;
    *type = it->second;
    return true;
  };
  auto any_input_from = [&](size_t first) {
    for (size_t i = first; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].empty()) return true;
    }
    return false;
  };
  if (n.op_type == "MatMulNBits") {
    const int64_t bits = IntAttr(n, "bits", 4), block = IntAttr(n, "block_size", 0);
    const int64_t level = IntAttr(n, "accuracy_level", 0);
    uint64_t type = 0;
    if (bits != 4) return "bits " + std::to_string(bits) + " (the kernel takes 4)";
    if (block < 32 || (block & (block - 1)) != 0) {
      return "block_size " + std::to_string(block) + " (the kernel takes a power of two from 32)";
    }
    if (level != 4) {
      return "accuracy_level " + std::to_string(level) +
             " (the kernel computes as level 4: int8 activations)";
    }
    if (any_input_from(4)) return "a g_idx or bias input";
    if (!initializer(1, &type)) return "B is not an initializer";
    if (!initializer(2, &type) || type != kFloat) return "scales are not a float32 initializer";
    if (n.inputs.size() > 3 && !n.inputs[3].empty() && (!initializer(3, &type) || type != kUint8)) {
      return "zero_points are not a uint8 initializer";
    }
    return "";
  }
  // GroupQueryAttention
  if (any_input_from(9)) return "a position_ids, attention_bias or head_sink input";
  bool head_ok = false;
  for (int h : kHeadSizes) head_ok = head_ok || h == head_size;
  if (!head_ok) {
    return "head size " + std::to_string(head_size) +
           " (the kernel takes 16, 32, 48, 64, 96 or 128)";
  }
  if (n.inputs.size() < 4 || n.inputs[3].empty()) return "no past_key input";
  auto it = g.input_types.find(n.inputs[3]);
  if (it == g.input_types.end() || it->second != kFloat) {
    return "past_key is not a float32 graph input (the kernel takes an fp32 query and cache)";
  }
  return "";
}

bool Wanted(const Node& n, CpuOpsKinds kinds) {
  if (n.domain != kMsDomain) return false;
  return (kinds.matmul && n.op_type == "MatMulNBits") ||
         (kinds.attention && n.op_type == "GroupQueryAttention");
}

// Plans the move over a read graph; `moves` receives the index of each node that moves.
CpuOpsPlan Plan(const Graph& g, CpuOpsKinds kinds, int head_size, std::vector<size_t>* moves) {
  CpuOpsPlan plan;
  for (const Node& n : g.nodes) plan.already_ebb_cpu += n.domain == kEbbDomain ? 1 : 0;
  if (plan.already_ebb_cpu > 0) return plan;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!Wanted(n, kinds)) continue;
    const std::string why = WhyLeft(n, g, head_size);
    if (!why.empty()) {
      plan.left.push_back("node '" + n.name + "' (" + n.op_type + "): " + why);
      continue;
    }
    (n.op_type == "MatMulNBits" ? plan.matmul : plan.attention) += 1;
    if (moves) moves->push_back(i);
  }
  return plan;
}

}  // namespace

CpuOpsIsas CpuOpsIsasFor(const std::set<std::string>& cpu_flags) {
  auto has = [&](const char* f) { return cpu_flags.count(f) > 0; };
  const bool avx512 = has("avx512f") && has("avx512bw");
  CpuOpsIsas isas;
  if (avx512 && has("avx512vl")) {
    isas.attention = "AVX-512";
  } else if (has("avx2") && has("fma") && has("f16c")) {
    isas.attention = "AVX2";
  }
  if (avx512 && has("avx512_vnni")) {
    isas.matmul = "AVX-512 VNNI";
  } else if (has("avx2") && has("fma")) {
    isas.matmul = "AVX2";
  }
  return isas;
}

CpuOpsKinds ResolveCpuOps(const std::string& setting, const std::set<std::string>& cpu_flags,
                          std::string* note) {
  const CpuOpsIsas isas = CpuOpsIsasFor(cpu_flags);
  const bool attention_cpu = !isas.attention.empty(), matmul_cpu = !isas.matmul.empty();
  CpuOpsKinds k;
  if (setting == "auto") {
    k.attention = attention_cpu;
    k.matmul = matmul_cpu;
  } else if (setting == "attention") {
    k.attention = attention_cpu;
    if (!attention_cpu)
      *note = "this CPU lacks AVX2 + FMA + F16C, which the attention kernel needs";
  } else if (setting == "matmul") {
    k.matmul = matmul_cpu;
    if (!matmul_cpu) {
      *note =
          "this CPU has neither AVX2 + FMA nor AVX-512 VNNI, which the int4 matmul kernel needs";
    }
  }
  return k;
}

CpuOpsPlan PlanCpuOps(const std::filesystem::path& onnx_file, CpuOpsKinds kinds, int head_size,
                      std::string* why_not) {
  try {
    const Mapping file(onnx_file);
    Span s(file.data(), file.size());
    return Plan(ReadGraph(s), kinds, head_size, nullptr);
  } catch (const Malformed& m) {
    *why_not = "cannot parse the model (" + m.what + ")";
    CpuOpsPlan unread;
    unread.unread = m.system;
    return unread;
  }
}

std::optional<RewrittenModel> RewriteForCpuOps(const std::filesystem::path& onnx_file,
                                               CpuOpsKinds kinds, int head_size, CpuOpsPlan* plan,
                                               std::string* why_not, bool* system_failure) {
  if (system_failure) *system_failure = false;
  try {
    const Mapping file(onnx_file);
    Span s(file.data(), file.size());
    const Graph g = ReadGraph(s);
    std::vector<size_t> moves;
    *plan = Plan(g, kinds, head_size, &moves);
    if (moves.empty()) {
      *why_not =
          plan->already_ebb_cpu > 0 ? "the graph already has ebb.cpu nodes" : "no node can move";
      return std::nullopt;
    }
    // Each moved node: its fields as they are, but the domain ebb.cpu.
    std::vector<std::string> moved(moves.size());
    uint64_t graph_len = g.end - g.begin;
    for (size_t m = 0; m < moves.size(); ++m) {
      const Node& n = g.nodes[moves[m]];
      std::string payload;
      ForEachField(s, n.payload_begin, n.payload_end,
                   [&](uint64_t f, int, uint64_t tag_begin, auto v) {
                     if (f == kNodeDomain) return;
                     payload.append(reinterpret_cast<const char*>(s.data() + tag_begin),
                                    v.second - tag_begin);
                   });
      PutLen(payload, kNodeDomain, kEbbDomain);
      PutLen(moved[m], kGraphNode, payload);
      graph_len = graph_len - (n.entry_end - n.entry_begin) + moved[m].size();
    }
    std::string graph_header;
    PutTag(graph_header, kModelGraph, kLen);
    PutVarint(graph_header, graph_len);
    std::string opset, opset_field;
    PutLen(opset, kOpsetDomain, kEbbDomain);
    PutInt(opset, kOpsetVersion, 1);
    PutLen(opset_field, kModelOpsetImport, opset);

    const uint8_t* d = file.data();
    auto bytes = [](const std::string& str) {
      return std::pair<const uint8_t*, uint64_t>{reinterpret_cast<const uint8_t*>(str.data()),
                                                 str.size()};
    };
    std::vector<std::pair<const uint8_t*, uint64_t>> pieces = {{d, g.tag_begin},
                                                               bytes(graph_header)};
    uint64_t at = g.begin;
    for (size_t m = 0; m < moves.size(); ++m) {
      const Node& n = g.nodes[moves[m]];
      pieces.push_back({d + at, n.entry_begin - at});
      pieces.push_back(bytes(moved[m]));
      at = n.entry_end;
    }
    pieces.push_back({d + at, g.end - at});
    pieces.push_back({d + g.end, file.size() - g.end});
    pieces.push_back(bytes(opset_field));  // a ModelProto's fields may come in any order
    return WriteRewrittenModel("ebb-cpu-ops-model", pieces, why_not, system_failure);
  } catch (const Malformed& m) {
    *why_not = "cannot parse the model (" + m.what + ")";
    if (system_failure) *system_failure = m.system;
    return std::nullopt;
  }
}

CpuOpsDecision DecideCpuOps(const GenaiConfig& cfg, const std::string& setting, bool on_device,
                            const std::string& custom_ops_library) {
  CpuOpsDecision d;
  if (setting == "off" || on_device || cfg.is_encoder) return d;
  if (!custom_ops_library.empty() &&
      std::filesystem::path(custom_ops_library).filename() == "libebb_cpu_ops.so") {
    d.notes.push_back("the folder names libebb_cpu_ops.so, whose ops its graph uses as it is");
    return d;
  }
  std::string note;
  const CpuOpsKinds kinds = ResolveCpuOps(setting, CpuFlags(), &note);
  if (!note.empty()) d.notes.push_back(note + "; that kind stays on ORT's kernels");
  if (!kinds.any()) return d;
  std::string why_not;
  d.plan = PlanCpuOps(cfg.model_path, kinds, cfg.head_size, &why_not);
  // Unread: an entry an earlier load built may hold moved nodes. Not when the folder names a
  // library: it may be ebb's under another name (tools/cpu_ops_model.py --library), which
  // registers ebb.cpu itself, and ORT refuses a domain registered twice.
  d.register_kernels = d.plan.moved() > 0 || (d.plan.unread && custom_ops_library.empty());
  for (const auto& left : d.plan.left) d.notes.push_back(left + "; it stays on ORT's kernel");
  if (d.plan.moved() == 0) {
    d.notes.push_back(d.plan.already_ebb_cpu > 0 ? "the graph already has ebb.cpu nodes"
                      : why_not.empty()          ? "no node of the graph can move"
                                                 : why_not);
    return d;
  }
  d.kinds = kinds;
  return d;
}

void ApplyCpuOpsToKernels(const CpuOpsPlan& moved, std::map<OpId, int>* ops) {
  for (const auto& [op, n] : {std::pair<const char*, int>{"GroupQueryAttention", moved.attention},
                              std::pair<const char*, int>{"MatMulNBits", moved.matmul}}) {
    if (n == 0) continue;
    int& from = (*ops)[{kMsDomain, op}];
    from -= std::min(from, n);
    if (from == 0) ops->erase({kMsDomain, op});
    (*ops)[{kCpuOpsDomain, op}] += n;
  }
}

void RegisterBuiltinCpuOps(Ort::SessionOptions& so) {
  Ort::ThrowOnError(ebb_cpu_ops::RegisterOps(so, &Ort::GetApi()));
}

}  // namespace ebb::internal
