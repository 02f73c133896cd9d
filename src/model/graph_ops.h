// Which operators a model's main graph uses, read straight from the .onnx file.
//
// A minimal, bounded protobuf walk (ebb does not link protobuf): ModelProto.graph (field 7) ->
// GraphProto.node (field 1) -> NodeProto.op_type (field 4). Every other field (initializers,
// attributes, doc strings) is skipped by seeking, so memory stays small whatever the file's size,
// and external data files are never opened. Only the main graph is read, not the subgraphs of
// If/Loop nodes or model-local functions.
// Thread-safety: a free function with no shared state.
#pragma once

#include <filesystem>
#include <set>
#include <string>

namespace ebb::internal {

// The distinct op_type values of the nodes of `onnx_file`'s main graph.
// Throws ebb::Error: NotFound when the file cannot be opened, InvalidArgument (naming the file and
// the byte offset) when it is not a well-formed ONNX protobuf.
std::set<std::string> GraphOpTypes(const std::filesystem::path& onnx_file);

}  // namespace ebb::internal
