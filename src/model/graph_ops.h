// Which operators a model's main graph uses, read straight from the .onnx file.
//
// A minimal, bounded protobuf walk (ebb does not link protobuf): ModelProto.graph (field 7) ->
// GraphProto.node (field 1) -> NodeProto.op_type (field 4) and .domain (field 7). Every other field
// (initializers, attributes, doc strings) is skipped by seeking, so memory stays small whatever the
// file's size, and external data files are never opened. Only the main graph is read, not the
// subgraphs of If/Loop nodes or model-local functions. Thread-safety: a free function with no
// shared state.
#pragma once

#include <compare>
#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace ebb::internal {

// An operator: its domain ("" for ONNX's default domain, also when the file spells it "ai.onnx";
// e.g. "com.microsoft" for ORT's contrib ops) and its type.
struct OpId {
  std::string domain;
  std::string op_type;
  auto operator<=>(const OpId&) const = default;
};

// How many nodes of `onnx_file`'s main graph use each operator. Throws as GraphOpTypes does.
std::map<OpId, int> GraphOps(const std::filesystem::path& onnx_file);

// The distinct op_type values of the nodes of `onnx_file`'s main graph.
// Throws ebb::Error: NotFound when the file cannot be opened, InvalidArgument (naming the file and
// the byte offset) when it is not a well-formed ONNX protobuf.
std::set<std::string> GraphOpTypes(const std::filesystem::path& onnx_file);

}  // namespace ebb::internal
