// src/cpu_ops/pack_file.h — a kernel's repacked weights in a file of their own, so that a later
// session maps them (clean, shareable file pages) instead of repacking them into anonymous memory
// (docs/cpu_ops.md "Memory").
//
// Where: the session config entries below, which ebb sets on the sessions of a compiled-model
// cache entry (model/model.cpp, model/model_cache.cpp): the build's check session writes the pack
// files into the entry being built (so they are in its manifest, its checksum and its disk
// budget, and removed with it), and every later load of the entry maps them. Without the entries
// (a folder naming libebb_cpu_ops.so, a load without the cache) a kernel packs into anonymous
// memory as before.
//
// A pack file: one page of header (magic, the layout's shape, a sample of the source weights),
// then each section at a page-aligned offset. A file whose header does not match what the kernel
// would pack is not used (the kernel packs anew); the cache entry's key and manifest already tie
// the file to the model, the header is a second check.
//
// Thread-safety: free functions and a move-only mapping; a file is written under a temporary name
// and renamed, so a concurrent reader sees the whole file or none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnxruntime_c_api.h"

namespace ebb_cpu_ops {

// Session config entries (OrtSessionOptions AddConfigEntry), read at kernel creation.
// The folder of the pack files; absent: pack into anonymous memory.
inline constexpr const char* kPackDirKey = "ebb.cpu_ops.pack_dir";
// "1": a kernel that finds no usable pack file writes one there (the cache build's check
// session); otherwise the folder is only read (a committed entry is never modified).
inline constexpr const char* kPackWriteKey = "ebb.cpu_ops.pack_write";
// "1": the session is never run (it only writes the optimised graph): kernels skip packing.
inline constexpr const char* kNoPackKey = "ebb.cpu_ops.no_pack";

// The pack-file settings of a kernel's session.
struct PackSettings {
  std::string dir;     // "" = no pack files
  bool write = false;  // kPackWriteKey
  bool skip = false;   // kNoPackKey
  std::string ledger;  // pack_ledger.h's kPackLedgerKey: where anonymous packs are counted
};
// Reads them from the kernel's session config (OrtApi::KernelInfo_GetConfigEntries).
PackSettings ReadPackSettings(const OrtApi& api, const OrtKernelInfo* info);

// What identifies a layout: the kernel's shape numbers and a sample of its source weights.
struct PackKey {
  std::vector<int64_t> shape;  // at most 16 numbers
  uint64_t source_sample = 0;  // SampleHash of the source
  bool operator==(const PackKey&) const = default;
};
// FNV-1a 64 of the first and last `edge` bytes of each range (the whole range when shorter).
uint64_t SampleHash(const std::vector<std::pair<const void*, size_t>>& ranges, size_t edge = 256);

// The file for node `node_name` in `dir`: dir/ebb-cpu-ops-<16 hex digits of the name's hash>.pack.
std::string PackPath(const std::string& dir, const std::string& node_name);

// A mapped pack file: its sections, read-only; unmapped when destroyed.
class PackMapping {
 public:
  ~PackMapping();
  PackMapping(const PackMapping&) = delete;
  PackMapping& operator=(const PackMapping&) = delete;
  const uint8_t* section(size_t i) const { return sections_[i]; }

 private:
  friend std::unique_ptr<PackMapping> OpenPack(const std::string&, const PackKey&,
                                               const std::vector<size_t>&);
  PackMapping() = default;
  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::vector<const uint8_t*> sections_;
};

// Maps `path` when its header holds `key` and sections of exactly `section_bytes`; null when the
// file is missing, short, or for another layout.
std::unique_ptr<PackMapping> OpenPack(const std::string& path, const PackKey& key,
                                      const std::vector<size_t>& section_bytes);

// Writes the sections with `key`'s header to `path` (a temporary name in the same folder, then a
// rename). Returns "" or why not (the caller keeps its own copy and goes on).
std::string WritePack(const std::string& path, const PackKey& key,
                      const std::vector<std::pair<const void*, size_t>>& sections);

}  // namespace ebb_cpu_ops
