// The compiled-model cache (option model_cache.dir; docs/memory.md "Compiled-model cache").
//
// Why: on every load ONNX Runtime parses the model, runs its graph optimisers, copies the
// initializers onto the heap and prepacks weights into anonymous memory. On the first load ebb
// lets ORT save the optimised graph (session.optimized_model_filepath) with every initializer of
// 1 KiB or more in one external-data file; later loads read that graph with ORT_DISABLE_ALL and
// ORT memory-maps the initializers from the file (clean, shareable file pages).
//
// Prepacked weights: ORT also saves its prepacked blobs in that file
// (session.save_external_prepacked_constant_initializers) and uses them in place from its mapping
// on the next load, so MatMulNBits' packed int4 weights become clean, shareable file pages
// instead of anonymous memory. ORT's saver aligns only blobs above 1 MiB, and MLAS reads a packed
// layout from the buffer's address modulo 64, so ebb rewrites every entry with each tensor and
// blob at a page-aligned offset (prepacked_align.h) and checks it once against the normal load
// (a fixed input's outputs must match; probe_run.h) before it is committed. ORT still runs
// PrePack() on a cached load (it looks the saved blob up by a hash of the packed bytes), so the
// cache saves memory and graph optimisation, not the prepacking time.
//
// When: Plan() finds an entry (kLoad) or decides one should be built (kBuild). A build is split so
// that it never holds a second copy of the weights beside the load's (docs/memory.md "The first
// load"): before the load, WriteOptimizedGraph() has ORT save the optimised graph from a session
// that does not prepack (a few hundred MiB at most); the model then loads normally; then
// BuildEntry() runs on a background thread at low priority (cache_builder.h): it cuts the
// prepacking nodes into chunks of about BuildJob::chunk_bytes of weights (prepack_chunks.h), has
// ORT prepack and save each chunk in turn, merges their blobs into the aligned entry, checks it
// and commits it. The next load maps the entry.
//
// Layout: <root>/<model file name>-<key>/ holds model.onnx (the optimised graph),
// model.onnx.data (its initializers and prepacked blobs) and manifest.json, written last. The
// key (16 hex digits of XXH64) covers the model files (size, mtime and the first and last MiB of
// each), the ORT version, the CPU's instruction-set level as MLAS dispatches on it (IsaLevel():
// the packed layouts of AVX2 and AVX-512 differ), the execution providers and every session
// option that can change the compiled graph.
//
// Disk budget: model_cache.max_bytes; after a commit the least recently loaded entries (by the
// entry folder's mtime, which every load from it touches) are removed until the folder fits.
//
// Atomicity: an entry is written into <root>/.tmp-<key>-<pid>-<n>, fsynced, its manifest
// (sizes, mtimes and XXH64 checksums) written and fsynced last, its files made read-only, then
// the folder is renamed into place. A crash leaves only a .tmp- folder, which is never loaded and
// is removed by a later load once its process is gone. A builder holds an advisory lock
// (<root>/.lock-<key>, flock) for the whole build: a second process that finds it held skips the
// build; should two build anyway (a lock on a filesystem without flock), the first rename wins
// and the other discards its copy. An entry is never modified in place (only removed whole), so
// a process that has it mapped keeps valid pages; a file someone else truncates under a running
// process is absorbed by MappedFileGuard (memory/mapped_file_guard.h), which fails the request.
//
// Verification on load: the manifest must parse and name this key; every file must have its
// recorded size and mtime; model.onnx is checksummed in full, and the data file in 1 MiB at each
// end plus 64 blocks of 64 KiB spread over it (a full checksum of a multi-GiB file would cost
// more than the cache saves). A failed check removes the entry and rebuilds it, with a log line
// saying why.
//
// Thread-safety: a ModelCache object belongs to one load; any number of loads (threads or
// processes) may use the same root at once.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ebb/options.h"
#include "model/model_cache_key.h"
#include "model/prepack_chunks.h"
#include "ort/provider_options.h"
#include "ort/session_options.h"

namespace ebb::internal {

class BuildLock;  // model_cache.cpp: the advisory lock of one entry's build

class ModelCache {
 public:
  enum class Action {
    kOff,    // load the model as before (cache off, not applicable, or no usable folder)
    kLoad,   // load cached_model() with ORT_DISABLE_ALL
    kBuild,  // WriteOptimizedGraph(), load the model normally, BuildEntry() in the background
  };

  // Decides what this load does. `setting` is model_cache.dir: "" (the default:
  // $EBB_MODEL_CACHE_DIR when set, else auto), "auto" ($XDG_CACHE_HOME/ebb/models, else
  // $HOME/.cache/ebb/models; an entry shipped in <model dir>/.ebb-cache is also read), "off", or
  // a folder. Never throws for file-system problems: it logs them and returns kOff, so a cache can
  // never stop a model from loading. `max_bytes`: model_cache.max_bytes (0 = no budget).
  static ModelCache Plan(const std::filesystem::path& model_path, const std::string& setting,
                         const EffectiveSessionOptions& session,
                         const std::vector<ProviderOptions>& config_providers,
                         const ModelOptions& options);

  ModelCache(ModelCache&&) noexcept;
  ModelCache& operator=(ModelCache&&) = delete;
  ModelCache(const ModelCache&) = delete;
  ~ModelCache();  // removes an uncommitted temp folder

  Action action() const { return action_; }
  // kLoad: the cached optimised graph.
  std::filesystem::path cached_model() const { return entry_ / kGraphFile; }
  // kBuild after WriteOptimizedGraph wrote the graph: BuildEntry has work to do.
  bool has_optimized_graph() const { return action_ == Action::kBuild && !temp_.empty(); }
  // This load does not use the cache although it could have (kOff since; logged): a build due
  // that could not start, or an entry left alone for want of memory or descriptors.
  bool build_skipped() const { return build_skipped_; }
  // What BuildEntry holds beside the live session at most (bytes; has_optimized_graph()): one
  // chunk's prepacked weights and ORT's saver's copy of one of its initializers, then the check
  // session (a load from the entry, whose prepacking pass keeps one weight at a time: 128 MiB).
  uint64_t build_transient_bytes() const;
  // The entry folder (where an entry is or will be); empty when the cache is off.
  const std::filesystem::path& entry() const { return entry_; }

  // kLoad: asks the kernel to read the entry's files ahead (POSIX_FADV_WILLNEED), so ORT's
  // page faults on the mapped data file hit the page cache instead of reading from disk in small
  // pieces. ORT reads all of the file during the load (to prepack) or the first token anyway.
  void Prefetch() const;
  // kLoad succeeded: touches the entry folder's mtime, the LRU order of the disk budget.
  void MarkUsed() const;
  // kLoad failed (ORT could not create a session from the entry): logs `why`, removes the
  // entry and turns this into kBuild (kOff after NoBuild).
  void RebuildAfterFailedLoad(const std::string& why);
  // This load must not build an entry (`why`: it could not read the graph its key describes, so
  // what it would write may differ from what the key says): kBuild turns into kOff, and a failed
  // kLoad rebuilds nothing. Loading an existing entry stays allowed.
  void NoBuild(const std::string& why);
  // kLoad failed because the process ran out of a resource (run_error.h's IsOutOfResources):
  // logs `why`, keeps the entry and turns this into kOff, so this load goes on without the cache
  // and the next one loads the entry again.
  void SkipAfterFailedLoad(const std::string& why);

  // What BuildEntry needs from the load. Every function may throw (Ort::Exception, ebb::Error);
  // BuildEntry logs the failure and builds nothing.
  struct BuildJob {
    // The load's session options (cloned per session the build creates).
    Ort::SessionOptions session_options{nullptr};
    // Creates a session of the model as the load did (ebb's graph rewrites included) with `so`.
    std::function<std::unique_ptr<Ort::Session>(Ort::SessionOptions so)> create_source;
    // The fixed probe (probe_run.h) on a session, and on the model's live session.
    std::function<std::vector<float>(Ort::Session&)> probe;
    std::function<std::vector<float>()> reference;
    // Weights per prepacking chunk (bytes): what the build holds beside the live session.
    uint64_t chunk_bytes = 64ull << 20;
  };
  // kBuild, before the load: takes the advisory lock, has ORT write the optimised graph (no
  // prepacking) into a temp folder with the load's options, and cuts its prepacking nodes into
  // chunk graphs (prepack_chunks.h). Returns true when it did (call BuildEntry after the load).
  // Otherwise logs why and changes the action: kOff (another process is building, no writable
  // folder, the write failed: nothing left behind) or kLoad (another process finished the entry
  // meanwhile). Never throws.
  bool WriteOptimizedGraph(BuildJob& job);
  // kBuild, after WriteOptimizedGraph and the load: prepacks and saves each chunk in turn (one
  // intra-op thread), merges and aligns every tensor and blob (prepacked_align.h), loads the result
  // and compares its probe with the reference, then commits (manifest, read-only files, rename),
  // releases the lock and applies the disk budget. Returns true when an entry was committed;
  // otherwise logs why (a failed check, disk full) and leaves nothing behind. Never throws. Runs
  // on the calling thread.
  bool BuildEntry(BuildJob& job);

  // The files of `entry` a loaded model maps its weights from: kDataFile and the repacked weights
  // of ebb's int4 matmul kernel (cpu_ops/pack_file.h, *.pack), sorted. Never throws.
  static std::vector<std::filesystem::path> WeightFiles(const std::filesystem::path& entry);

  static constexpr const char* kGraphFile = "model.onnx";
  static constexpr const char* kDataFile = "model.onnx.data";
  static constexpr const char* kManifestFile = "manifest.json";
  // Every tensor and prepacked blob of an entry starts at a multiple of this (the page size,
  // which also keeps each blob's pages its own when they are released).
  static constexpr uint64_t kAlignment = 4096;

 private:
  ModelCache() = default;
  void SkipThisLoad();  // kOff, and build_skipped(): the caller has logged why
  bool StartBuild();    // creates temp_; false (logged) when the root cannot be written
  bool Commit();        // temp_ -> entry_; false (logged) on failure
  void EnforceBudget() const;

  Action action_ = Action::kOff;
  std::filesystem::path model_path_;  // canonical source model file
  std::filesystem::path root_;
  std::filesystem::path entry_;
  std::filesystem::path temp_;
  std::string key_;
  std::string fingerprint_;  // of the model files alone (stale-entry detection)
  std::string inputs_;       // readable text of the graph-changing inputs (manifest)
  uint64_t max_bytes_ = 0;
  double build_started_ms_ = 0;
  std::unique_ptr<BuildLock> lock_;  // held from WriteOptimizedGraph to the end of BuildEntry
  PrepackChunks chunks_;             // written by WriteOptimizedGraph
  uint64_t chunk_bytes_ = 0;         // BuildJob::chunk_bytes of that call
  bool build_skipped_ = false;
  std::string no_build_;  // NoBuild's reason; empty when this load may build
};

}  // namespace ebb::internal
