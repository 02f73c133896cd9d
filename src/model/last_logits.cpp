#include "model/last_logits.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

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
using proto::PutTag;
using proto::PutVarint;
using proto::Span;

using namespace proto::onnx;  // the field numbers (proto_wire.h)

// A Constant node whose value is the int64 vector `values` (a Reshape's shape).
std::string ConstantInt64Node(const std::string& output, const std::vector<int64_t>& values) {
  std::string tensor;
  PutInt(tensor, kTensorDims, values.size());
  PutInt(tensor, kTensorDataType, kInt64);
  std::string raw(values.size() * sizeof(int64_t), '\0');
  // ONNX raw_data is little-endian; so is every platform ebb builds for (x86-64, aarch64).
  std::memcpy(raw.data(), values.data(), raw.size());
  PutLen(tensor, kTensorRawData, raw);
  std::string attr;
  PutLen(attr, kAttrName, "value");
  PutLen(attr, kAttrTensor, tensor);
  PutInt(attr, kAttrType, kAttrTypeTensor);
  std::string node;
  PutLen(node, kNodeOutput, output);
  PutLen(node, kNodeName, output + "/Constant");
  PutLen(node, kNodeOpType, "Constant");
  PutLen(node, kNodeAttribute, attr);
  return node;
}

std::string Node(const std::string& op, const std::vector<std::string>& inputs,
                 const std::string& output, int64_t axis = -1) {
  std::string node;
  for (const auto& in : inputs) PutLen(node, kNodeInput, in);
  PutLen(node, kNodeOutput, output);
  PutLen(node, kNodeName, output + "/" + op);
  PutLen(node, kNodeOpType, op);
  if (axis >= 0) {
    std::string attr;
    PutLen(attr, kAttrName, "axis");
    PutInt(attr, kAttrInt, static_cast<uint64_t>(axis));
    PutInt(attr, kAttrType, kAttrTypeInt);
    PutLen(node, kNodeAttribute, attr);
  }
  return node;
}

// The graph input ebb_logits_index: int64 [batch_size].
std::string IndexInputValueInfo() {
  std::string dim, shape, tensor, type, vi;
  PutLen(dim, kDimParam, "batch_size");
  PutLen(shape, kShapeDim, dim);
  PutInt(tensor, kTensorElemType, kInt64);
  PutLen(tensor, kTensorShape, shape);
  PutLen(type, kTypeTensor, tensor);
  PutLen(vi, kValueInfoName, kLogitsIndexInput);
  PutLen(vi, kValueInfoType, type);
  return vi;
}

struct NodeRef {
  uint64_t entry_begin = 0, entry_end = 0;      // the whole graph field (tag included)
  uint64_t payload_begin = 0, payload_end = 0;  // the NodeProto
  std::vector<std::string> inputs, outputs;
  std::string op_type, domain;
};

}  // namespace

std::optional<RewrittenModel> WriteRewrittenModel(
    const char* name, const std::vector<std::pair<const uint8_t*, uint64_t>>& pieces,
    std::string* why_not, bool* system_failure) {
  int err = 0;
  platform::File mem = platform::File::CreateInMemory(name, &err);
  if (!mem.is_open()) {
    *why_not = std::string("memfd_create failed: ") + std::strerror(err);
    if (system_failure) *system_failure = true;
    return std::nullopt;
  }
  for (const auto& [p, n] : pieces) {
    if (err == 0) err = mem.WriteAll(p, n);
  }
  if (err != 0) {
    *why_not = std::string("writing the rewritten model failed: ") + std::strerror(err);
    if (system_failure) *system_failure = true;
    return std::nullopt;
  }
  std::filesystem::path path = mem.OpenablePath();
  return RewrittenModel(std::move(mem), std::move(path));
}

std::optional<RewrittenModel> RewriteForLastLogits(const std::filesystem::path& onnx_file,
                                                   const std::string& logits_output,
                                                   int hidden_size, std::string* why_not,
                                                   bool* system_failure) {
  if (system_failure) *system_failure = false;
  if (hidden_size <= 0) {
    *why_not = "genai_config.json has no model.decoder.hidden_size";
    return std::nullopt;
  }
  try {
    const Mapping file(onnx_file);
    Span s(file.data(), file.size());
    // ModelProto: the one graph field.
    uint64_t graph_tag = 0, graph_begin = 0, graph_end = 0;
    int graphs = 0;
    ForEachField(s, 0, s.size(), [&](uint64_t field, int wt, uint64_t tag_begin, auto value) {
      if (field != kModelGraph || wt != kLen) return;
      ++graphs;
      graph_tag = tag_begin;
      graph_begin = value.first;
      graph_end = value.second;
    });
    if (graphs != 1) {
      *why_not = "expected one graph in the model, found " + std::to_string(graphs);
      return std::nullopt;
    }
    // GraphProto: nodes and input names.
    std::vector<NodeRef> nodes;
    std::set<std::string> input_names;
    ForEachField(
        s, graph_begin, graph_end, [&](uint64_t field, int wt, uint64_t tag_begin, auto value) {
          if (wt != kLen) return;
          if (field == kGraphNode) {
            NodeRef n;
            n.entry_begin = tag_begin;
            n.entry_end = value.second;
            n.payload_begin = value.first;
            n.payload_end = value.second;
            nodes.push_back(std::move(n));
          } else if (field == kGraphInput) {
            const uint64_t after = s.pos;
            ForEachField(s, value.first, value.second, [&](uint64_t f, int w, uint64_t, auto v) {
              if (f == kValueInfoName && w == kLen) {
                input_names.insert(std::string(s.Str(v)));
              }
            });
            s.pos = after;
          }
        });
    for (auto& n : nodes) {
      ForEachField(s, n.payload_begin, n.payload_end, [&](uint64_t f, int w, uint64_t, auto v) {
        if (w != kLen) return;
        if (f == kNodeInput) n.inputs.emplace_back(s.Str(v));
        if (f == kNodeOutput) n.outputs.emplace_back(s.Str(v));
        if (f == kNodeOpType) n.op_type = s.Str(v);
        if (f == kNodeDomain) n.domain = s.Str(v);
      });
    }
    if (input_names.count(kLogitsIndexInput)) {
      *why_not = std::string("the graph already has an input named ") + kLogitsIndexInput;
      return std::nullopt;
    }
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const auto& o : nodes[i].outputs) producer[o] = i;
    }
    const std::string prefix = "/ebb/last_logits/";
    for (const auto& [name, i] : producer) {
      if (name.rfind(prefix, 0) == 0) {
        *why_not = "the graph already has ebb's last-logits nodes";
        return std::nullopt;
      }
    }
    // The LM head: the logits' producer, through any Casts (fp16 models cast the logits).
    auto it = producer.find(logits_output);
    if (it == producer.end()) {
      *why_not = "no node produces the logits output '" + logits_output + "'";
      return std::nullopt;
    }
    size_t head = it->second;
    for (int hops = 0; nodes[head].op_type == "Cast" && nodes[head].domain.empty(); ++hops) {
      auto up = nodes[head].inputs.empty() ? producer.end() : producer.find(nodes[head].inputs[0]);
      if (up == producer.end() || hops > 4) break;
      head = up->second;
    }
    const NodeRef& lm = nodes[head];
    const bool matmul = lm.op_type == "MatMul" && (lm.domain.empty() || lm.domain == "ai.onnx");
    const bool nbits = lm.op_type == "MatMulNBits" && lm.domain == "com.microsoft";
    if ((!matmul && !nbits) || lm.inputs.empty() || lm.inputs[0].empty()) {
      *why_not = "the logits come from a " + lm.op_type + " node, not a MatMul or MatMulNBits";
      return std::nullopt;
    }
    const std::string hidden = lm.inputs[0];
    const std::string shape2 = prefix + "shape_2d", flat = prefix + "flat", rows = prefix + "rows",
                      shape3 = prefix + "shape_3d", picked = prefix + "hidden";
    const int64_t H = hidden_size;
    std::string inserted;
    PutLen(inserted, kGraphNode, ConstantInt64Node(shape2, {-1, H}));
    PutLen(inserted, kGraphNode, Node("Reshape", {hidden, shape2}, flat));
    PutLen(inserted, kGraphNode, Node("Gather", {flat, kLogitsIndexInput}, rows, /*axis=*/0));
    PutLen(inserted, kGraphNode, ConstantInt64Node(shape3, {-1, 1, H}));
    PutLen(inserted, kGraphNode, Node("Reshape", {rows, shape3}, picked));
    // The LM head node with its first input replaced; every other field copied as it is.
    std::string head_node;
    bool replaced = false;
    ForEachField(s, lm.payload_begin, lm.payload_end,
                 [&](uint64_t f, int w, uint64_t tag_begin, auto v) {
                   if (f == kNodeInput && w == kLen && !replaced) {
                     PutLen(head_node, kNodeInput, picked);
                     replaced = true;
                     return;
                   }
                   head_node.append(reinterpret_cast<const char*>(s.data() + tag_begin),
                                    v.second - tag_begin);
                 });
    PutLen(inserted, kGraphNode, head_node);
    std::string index_input;
    PutLen(index_input, kGraphInput, IndexInputValueInfo());

    // The new graph: nodes before the LM head, the inserted nodes and the new LM head (so the
    // node list stays in topological order), the rest, the new input.
    const uint64_t graph_len = (graph_end - graph_begin) - (lm.entry_end - lm.entry_begin) +
                               inserted.size() + index_input.size();
    std::string graph_header;
    PutTag(graph_header, kModelGraph, kLen);
    PutVarint(graph_header, graph_len);

    const uint8_t* d = file.data();
    return WriteRewrittenModel(
        "ebb-last-logits-model",
        {{d, graph_tag},
         {reinterpret_cast<const uint8_t*>(graph_header.data()), graph_header.size()},
         {d + graph_begin, lm.entry_begin - graph_begin},
         {reinterpret_cast<const uint8_t*>(inserted.data()), inserted.size()},
         {d + lm.entry_end, graph_end - lm.entry_end},
         {reinterpret_cast<const uint8_t*>(index_input.data()), index_input.size()},
         {d + graph_end, file.size() - graph_end}},
        why_not, system_failure);
  } catch (const Malformed& m) {
    *why_not = "cannot parse the model (" + m.what + ")";
    if (system_failure) *system_failure = m.system;
    return std::nullopt;
  }
}

}  // namespace ebb::internal
