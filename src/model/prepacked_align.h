// AlignExternalData — rewrites ORT's saved optimised model so that every external tensor and
// every prepacked blob starts at a file offset that is a multiple of `alignment`.
//
// Why: with session.save_external_prepacked_constant_initializers=1 ORT writes MatMulNBits'
// prepacked blobs into the external-data file and, on the next load, uses them in place from its
// mapping of that file. ORT's saver aligns a blob only when it is larger than align_threshold
// (1 MiB; ExternalDataInfo::AddPrepackedEntriesToProto, model_saving_options.h), and MLAS finds
// the sub-buffers of a packed MatMulNBits weight by aligning the buffer's *address* to 64 bytes
// (MlasAlignAddress in qnbitgemm.h). A small blob at an offset that is not a multiple of 64 is
// therefore read with a different layout than it was written with: NaN or wrong logits. ORT maps
// external data at page-aligned file offsets, so a blob's address is congruent to its file offset
// modulo the page size: an aligned offset is an aligned address.
//
// The rewrite is a bounded protobuf edit (proto_wire.h): the graph file is re-emitted with only
// the external-data records of the main graph's initializers changed (`offset`, and the
// `prepacked_*` records' "key|offset;length;checksum|..." values); the data file is copied region
// by region, each at the next multiple of `alignment`, zero-padded. Regions that several records
// share are written once. Subgraph initializers are not rewritten: a graph with subgraph
// initializers in the data file is refused (their offsets would be stale).
//
// Thread-safety: a free function with no shared state. On failure (throws ebb::Error Internal,
// naming the file and the problem) the output files may exist partially: the caller writes into a
// temporary folder and removes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ebb::internal {

struct AlignedExternalData {
  uint64_t num_tensors = 0;          // initializers with external data
  uint64_t num_prepacked_blobs = 0;  // prepacked blobs among the regions
  uint64_t num_regions = 0;          // distinct regions written
  uint64_t num_were_misaligned = 0;  // regions whose original offset was not aligned
  uint64_t data_bytes = 0;           // size of the written data file (padding included)
  uint64_t num_from_overlays = 0;    // initializers taken, with their blobs, from an overlay
};

// Reads `graph_in` and the data file its records name (`data_name`, in graph_in's folder) and
// writes `graph_out` and `graph_out.parent_path() / data_name`. `alignment` is a power of two.
//
// `overlays`: graphs ORT saved with prepacked blobs from parts of `graph_in` (prepack_chunks.h),
// each with its data file `data_name` beside it. A `graph_in` initializer that an overlay holds
// with prepacked records is written from the overlay (its bytes and its blobs) instead: the
// output is `graph_in` as if ORT had saved it whole with its blobs.
AlignedExternalData AlignExternalData(const std::filesystem::path& graph_in,
                                      const std::filesystem::path& graph_out,
                                      const std::string& data_name, uint64_t alignment,
                                      const std::vector<std::filesystem::path>& overlays = {});

// The offsets of every external region `graph`'s main-graph initializers reference (tensors and
// prepacked blobs) that are not multiples of `alignment`; 0 when all are aligned. For tests and
// for a cache entry's verification.
uint64_t CountMisalignedRegions(const std::filesystem::path& graph, uint64_t alignment);

}  // namespace ebb::internal
