// WritePrepackChunks — splits the prepacking operators of ORT's saved optimised graph into small
// graphs of their own, so that a compiled-model cache entry's prepacked blobs can be written a
// few weights at a time (model_cache.h).
//
// Why: ORT writes prepacked blobs only from a session that holds every one of them (it prepacks
// all weights at session creation, then saves), and its saver copies each initializer into a
// heap buffer while it writes (the fp32 embedding of the phi-3.5 shape: 376 MiB). Building an
// entry from a whole-graph session beside the live one therefore cost the weights twice (4.4 GiB
// anonymous on the phi shape, against 2.0 GiB for the load itself). A chunk graph holds only some
// prepacking nodes and the initializers they read, so its session prepacks and writes only those
// (about `chunk_bytes` of weights); AlignExternalData's overlays (prepacked_align.h) put the
// chunks' blobs back onto the whole graph's initializers.
//
// A chunk graph is a ModelProto with the source's model-level fields (IR version, opsets), the
// nodes copied verbatim, their initializers copied verbatim (external data records unchanged, so
// the chunk must sit in the source graph's folder, as it does), one graph input per other input
// and one graph output per node output, typed with the node's float type. Nodes that read the
// same initializer stay in one chunk.
//
// Which nodes: the CPU kernels that prepack an LLM's or an encoder's weights, whose other inputs'
// types are known: MatMulNBits and DynamicQuantizeMatMul (com.microsoft; type from the scales
// initializer, every input but A an initializer), MatMul, Gemm and FusedMatMul whose B is an
// initializer (type from B), and the fused Attention of BERT-like encoders (type from its
// weights; mask_index and past_sequence_length are int32). Another prepacking kernel is not
// carried; a cached load then prepacks that weight into anonymous memory as an uncached load does
// (one of these types that could not be carried is counted in `num_skipped`).
//
// Thread-safety: a free function with no shared state. Throws ebb::Error (Internal) naming the
// file for an unreadable or malformed graph or a failed write.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace ebb::internal {

struct PrepackChunks {
  std::vector<std::filesystem::path> graphs;  // <graph folder>/prepack-<i>.onnx, in graph order
  uint64_t num_nodes = 0;                     // prepacking nodes carried
  uint64_t num_skipped = 0;                   // nodes of those types that could not be carried
  uint64_t largest_chunk_bytes = 0;           // initializer bytes of the largest chunk
};

// Reads `graph` (an ONNX file whose external data sits beside it) and writes its chunk graphs
// next to it, each holding initializers of at most `chunk_bytes` (a group of nodes sharing one
// larger weight is a chunk alone). No prepacking node: no chunks.
PrepackChunks WritePrepackChunks(const std::filesystem::path& graph, uint64_t chunk_bytes);

}  // namespace ebb::internal
