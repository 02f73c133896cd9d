#include "model/prepack_chunks.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/files.h"
#include "ebb/error.h"
#include "model/proto_wire.h"
#include "platform/file.h"

namespace ebb::internal {
namespace {

using proto::ForEachField;
using proto::kLen;
using proto::kVarint;
using proto::Malformed;
using proto::Mapping;
using proto::PutInt;
using proto::PutLen;
using proto::Span;

using namespace proto::onnx;  // the field numbers (proto_wire.h)

using Range = std::pair<uint64_t, uint64_t>;

struct Initializer {
  Range payload;
  uint64_t data_type = 0;
  uint64_t bytes = 0;  // external "length", else raw_data's size
};

struct Node {
  Range payload;
  std::vector<std::string> inputs, outputs;
  std::string op_type, domain;
};

bool IsFloatType(uint64_t t) { return t == kFloat || t == kFloat16 || t == kBfloat16; }

constexpr uint64_t kInt32 = 6;  // TensorProto.DataType.INT32

bool IsPrepackingType(const std::string& op) {
  return op == "MatMulNBits" || op == "MatMul" || op == "Gemm" || op == "FusedMatMul" ||
         op == "Attention" || op == "DynamicQuantizeMatMul";
}

// The node's float type T when it is a prepacking node this writer carries, else 0. Its graph
// inputs then get InputType(n, i, T).
uint64_t CarriedType(const Node& n, const std::map<std::string, Initializer>& inits) {
  auto init_type = [&](size_t i) -> uint64_t {
    if (i >= n.inputs.size()) return 0;
    const auto it = inits.find(n.inputs[i]);
    return it == inits.end() ? 0 : it->second.data_type;
  };
  // Every input from `first` on is absent or an initializer.
  auto constant_from = [&](size_t first) {
    for (size_t i = first; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].empty() && init_type(i) == 0) return false;
    }
    return true;
  };
  const bool onnx_domain = n.domain.empty() || n.domain == "ai.onnx";
  const bool ms_domain = n.domain == "com.microsoft";
  uint64_t t = 0;
  if ((n.op_type == "MatMulNBits" || n.op_type == "DynamicQuantizeMatMul") && ms_domain) {
    // A: T1; B: integers; scales: T1; zero points, g_idx (int32) and bias must be initializers
    // too, so that only A (T1) is a graph input.
    t = init_type(2);
    if (init_type(1) == 0 || !constant_from(3)) return 0;
  } else if (((n.op_type == "MatMul" || n.op_type == "Gemm") && onnx_domain) ||
             (n.op_type == "FusedMatMul" && ms_domain)) {
    t = init_type(1);  // every input of MatMul, Gemm and FusedMatMul has type T
  } else if (n.op_type == "Attention" && ms_domain) {
    t = init_type(1);  // the packed QKV weights; mask_index and past_sequence_length are int32
  }
  return IsFloatType(t) ? t : 0;
}

uint64_t InputType(const Node& n, size_t i, uint64_t t) {
  if (n.op_type == "Attention" && (i == 3 || i == 6)) return kInt32;
  return t;
}

std::string TypedValueInfo(const std::string& name, uint64_t elem_type) {
  std::string tensor, type, vi;
  PutInt(tensor, kTensorElemType, elem_type);
  PutLen(type, kTypeTensor, tensor);
  PutLen(vi, kValueInfoName, name);
  PutLen(vi, kValueInfoType, type);
  return vi;
}

// Union-find over node indices: nodes reading one initializer belong together.
struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t Find(size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void Join(size_t a, size_t b) { parent[Find(a)] = Find(b); }
};

void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  int err = 0;
  platform::File f = platform::File::Open(path, platform::OpenMode::kWriteTruncate, &err);
  if (!f.is_open()) throw Malformed{"cannot create " + path.string() + ": " + DescribeErrno(err)};
  const int write_err = f.WriteAll(bytes);
  const int close_err = f.Close();
  if (write_err != 0 || close_err != 0) {
    throw Malformed{"cannot write " + path.string() + ": " +
                    DescribeErrno(write_err != 0 ? write_err : close_err)};
  }
}

}  // namespace

PrepackChunks WritePrepackChunks(const std::filesystem::path& graph_path, uint64_t chunk_bytes) {
  PrepackChunks result;
  try {
    const Mapping file(graph_path);
    Span s(file.data(), file.size());
    const Range graph = proto::FindGraph(s);

    std::map<std::string, Initializer> inits;
    std::vector<Node> nodes;
    ForEachField(s, graph.first, graph.second, [&](uint64_t field, int wt, uint64_t, Range v) {
      if (wt != kLen) return;
      if (field == kGraphInitializer) {
        Initializer init{v, 0, 0};
        std::string name;
        ForEachField(s, v.first, v.second, [&](uint64_t f, int w, uint64_t, Range r) {
          if (f == kTensorName && w == kLen) name = std::string(s.Str(r));
          if (f == kTensorRawData && w == kLen) init.bytes = r.second - r.first;
        });
        // data_type is a varint, whose value ForEachField does not return: a cursor reads it.
        Span t(s.data(), s.size());
        t.pos = v.first;
        while (t.pos < v.second) {
          const uint64_t tag = t.Varint(v.second);
          const int w = static_cast<int>(tag & 7);
          if ((tag >> 3) == kTensorDataType && w == kVarint) {
            init.data_type = t.Varint(v.second);
          } else {
            t.Value(w, v.second);
          }
        }
        for (const auto& e : proto::ReadEntries(s, v)) {
          if (e.key == "length") init.bytes = std::stoull(e.value);
        }
        inits[name] = init;
      } else if (field == kGraphNode) {
        Node n;
        n.payload = v;
        ForEachField(s, v.first, v.second, [&](uint64_t f, int w, uint64_t, Range r) {
          if (w != kLen) return;
          if (f == kNodeInput) n.inputs.emplace_back(s.Str(r));
          if (f == kNodeOutput) n.outputs.emplace_back(s.Str(r));
          if (f == kNodeOpType) n.op_type = std::string(s.Str(r));
          if (f == kNodeDomain) n.domain = std::string(s.Str(r));
        });
        nodes.push_back(std::move(n));
      }
    });

    // The carried nodes, grouped by the initializers they share.
    std::vector<size_t> carried;
    std::vector<uint64_t> types(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      types[i] = CarriedType(nodes[i], inits);
      if (types[i] != 0) {
        carried.push_back(i);
      } else if (IsPrepackingType(nodes[i].op_type) && nodes[i].inputs.size() > 1 &&
                 inits.count(nodes[i].inputs[1])) {
        // These kernels prepack their input 1 (B, the weights); on two activations they prepack
        // nothing, which is no loss.
        ++result.num_skipped;
      }
    }
    if (carried.empty()) return result;
    Groups groups(nodes.size());
    std::map<std::string, size_t> first_reader;
    for (size_t i : carried) {
      for (const auto& in : nodes[i].inputs) {
        if (!inits.count(in)) continue;
        const auto [it, inserted] = first_reader.try_emplace(in, i);
        if (!inserted) groups.Join(i, it->second);
      }
    }
    // Groups in graph order (of their first node), each with its distinct initializers' bytes.
    std::vector<size_t> order;
    std::map<size_t, std::vector<size_t>> members;
    for (size_t i : carried) {
      auto& m = members[groups.Find(i)];
      if (m.empty()) order.push_back(groups.Find(i));
      m.push_back(i);
    }
    auto group_bytes = [&](const std::vector<size_t>& m) {
      std::set<std::string> seen;
      uint64_t b = 0;
      for (size_t i : m) {
        for (const auto& in : nodes[i].inputs) {
          const auto it = inits.find(in);
          if (it != inits.end() && seen.insert(in).second) b += it->second.bytes;
        }
      }
      return b;
    };
    std::vector<std::vector<size_t>> chunks;
    uint64_t current = 0;
    for (size_t g : order) {
      const uint64_t b = group_bytes(members[g]);
      if (chunks.empty() || (current > 0 && current + b > chunk_bytes)) {
        chunks.emplace_back();
        current = 0;
      }
      chunks.back().insert(chunks.back().end(), members[g].begin(), members[g].end());
      current += b;
      result.largest_chunk_bytes = std::max(result.largest_chunk_bytes, current);
    }

    // The model-level fields but the graph, verbatim.
    std::string model_head;
    ForEachField(s, 0, s.size(), [&](uint64_t field, int, uint64_t tag_begin, Range v) {
      if (field == kModelGraph) return;
      model_head.append(reinterpret_cast<const char*>(s.data() + tag_begin), v.second - tag_begin);
    });
    for (size_t c = 0; c < chunks.size(); ++c) {
      std::string g;
      PutLen(g, kGraphName, "ebb-prepack-" + std::to_string(c));
      std::set<std::string> produced, written_inits, declared;
      for (size_t i : chunks[c]) {
        produced.insert(nodes[i].outputs.begin(), nodes[i].outputs.end());
      }
      std::string inputs, outputs;
      for (size_t i : chunks[c]) {
        const Node& n = nodes[i];
        PutLen(g, kGraphNode, s.Str(n.payload));
        ++result.num_nodes;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const std::string& in = n.inputs[k];
          if (in.empty()) continue;
          if (const auto it = inits.find(in); it != inits.end()) {
            if (written_inits.insert(in).second) {
              PutLen(g, kGraphInitializer, s.Str(it->second.payload));
            }
          } else if (!produced.count(in) && declared.insert(in).second) {
            PutLen(inputs, kGraphInput, TypedValueInfo(in, InputType(n, k, types[i])));
          }
        }
        for (const auto& out : n.outputs) {
          if (!out.empty()) PutLen(outputs, kGraphOutput, TypedValueInfo(out, types[i]));
        }
      }
      g += inputs;
      g += outputs;
      std::string model = model_head;
      PutLen(model, kModelGraph, g);
      const std::filesystem::path out =
          graph_path.parent_path() / ("prepack-" + std::to_string(c) + ".onnx");
      WriteFile(out, model);
      result.graphs.push_back(out);
    }
  } catch (const Malformed& m) {
    throw Error(ErrorCode::Internal,
                "cannot split the prepacking nodes of " + graph_path.string() + ": " + m.what);
  } catch (const std::exception& e) {  // std::stoull on a bad "length"
    throw Error(ErrorCode::Internal,
                "cannot split the prepacking nodes of " + graph_path.string() + ": " + e.what());
  }
  return result;
}

}  // namespace ebb::internal
