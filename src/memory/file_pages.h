// The resident pages of a model's own files in this process's address space.
//
// Why: ONNX Runtime maps a model's external-data file (model.onnx.data) MAP_PRIVATE while it
// loads, and copies or prepacks most tensors out of it into its arena. The file pages it touched
// stay mapped and count in RSS although almost nothing reads them again: on the
// Phi-3.5-mini-shaped int4 model, 444 MiB (every MatMulNBits scale tensor), of which a request
// touches 11 MiB. ReleaseFilePages asks the kernel to reclaim them.
#pragma once

#include <cstdint>
#include <filesystem>

namespace ebb::internal {

struct MappedFilePages {
  uint64_t num_mappings = 0;    // mappings of files under the folder
  uint64_t resident_bytes = 0;  // their resident pages ("Rss:" in /proc/self/smaps), bytes
};

// The mappings of regular files under `dir` (any depth) and their resident bytes.
MappedFilePages ResidentFilePages(const std::filesystem::path& dir);

// Page-out advice (platform::Advice::kPageOut; Linux MADV_PAGEOUT) on every mapping of a file
// under `dir`. Loses nothing: clean file pages
// are dropped and fault back in from the file if read again; a copy-on-write page that was
// written is anonymous memory and is swapped or kept, never discarded. A hint only: a kernel
// without MADV_PAGEOUT (before 5.4) leaves everything resident. Returns the state before and
// after. Thread-safe (reads /proc; madvise on ranges ORT owns does not change their contents).
// Mappings of files under `keep` (when not empty) are left alone and not counted: a compiled-model
// cache entry under the model folder holds the weights ORT runs from (model/model_cache.h), and
// paging them out would only make the first request read them back.
struct FilePagesRelease {
  MappedFilePages before, after;
};
FilePagesRelease ReleaseFilePages(const std::filesystem::path& dir,
                                  const std::filesystem::path& keep = {});

}  // namespace ebb::internal
