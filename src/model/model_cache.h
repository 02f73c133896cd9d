// The compiled-model cache (option model_cache.dir; docs/memory.md "Compiled-model cache").
//
// Why: on every load ONNX Runtime parses the model, runs its graph optimisers, copies the
// initializers onto the heap and prepacks weights into anonymous memory. On the first load ebb
// lets ORT save the optimised graph (session.optimized_model_filepath) with every initializer of
// 1 KiB or more in one external-data file; later loads read that graph with ORT_DISABLE_ALL and
// ORT memory-maps the initializers from the file (clean, shareable file pages).
//
// Prepacked weights: ORT can also save its prepacked blobs in that file
// (session.save_external_prepacked_constant_initializers) and map them on the next load. ebb
// does so only for graphs without MatMulNBits: ORT 1.29's saved MatMulNBits blobs give NaN
// logits when loaded back (measured on the synthesized int4 models; fp32 MatMul blobs round-trip
// exactly). int4 graphs therefore still prepack MatMulNBits on every load, into anonymous memory.
//
// Layout: <root>/<model file name>-<key>/ holds model.onnx (the optimised graph),
// model.onnx.data (its initializers and prepacked blobs) and manifest.json, written last. The
// key (16 hex digits of XXH64) covers the model files (size, mtime and the first and last MiB of
// each), the ORT version, the CPU (model name and ISA flags: MLAS's prepacked layouts depend on
// them), the execution providers and every session option that can change the compiled graph.
//
// Atomicity: an entry is written into <root>/.tmp-<key>-<pid>-<n>, fsynced, its manifest
// (sizes, mtimes and XXH64 checksums) written and fsynced last, then the folder is renamed into
// place. A crash leaves only a .tmp- folder, which is never loaded and is removed by a later load
// once its process is gone. Two processes building the same entry at once each write their own
// temp folder; the first rename wins and the other discards its copy. An entry is never modified
// in place (only removed whole), so a process that has it mapped keeps valid pages.
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
#include <string>
#include <vector>

#include "ebb/options.h"
#include "ort/provider_options.h"
#include "ort/session_options.h"

namespace ebb::internal {

class ModelCache {
 public:
  enum class Action {
    kOff,    // load the model as before (cache off, not applicable, or no usable folder)
    kLoad,   // load cached_model() with ORT_DISABLE_ALL
    kBuild,  // load the model with AddBuildOptions(); Commit() after the session exists
  };

  // Decides what this load does. `setting` is model_cache.dir: "" or "auto" (the default:
  // <model dir>/.ebb-cache when it can be written, else $XDG_CACHE_HOME/ebb, else
  // $HOME/.cache/ebb), "off", or a folder. Never throws for file-system problems: it logs them
  // and returns kOff, so a cache can never stop a model from loading. Removes stale entries of
  // the same model file (built from other model contents) and temp folders of dead processes.
  // `save_prepacked`: whether ORT may save prepacked blobs for this graph (false for graphs with
  // MatMulNBits, see above); part of the key.
  static ModelCache Plan(const std::filesystem::path& model_path, const std::string& setting,
                         const KeyValues& config_session,
                         const std::vector<ProviderOptions>& config_providers,
                         const ModelOptions& options, bool save_prepacked);

  ModelCache(ModelCache&&) noexcept;
  ModelCache& operator=(ModelCache&&) = delete;
  ModelCache(const ModelCache&) = delete;
  ~ModelCache();  // removes an uncommitted temp folder

  Action action() const { return action_; }
  // kLoad: the cached optimised graph.
  std::filesystem::path cached_model() const { return entry_ / kGraphFile; }
  // The folder whose files ORT maps on a cached load (the entry), for memory.release_file_pages
  // to leave alone: those pages are the weights. Empty when nothing is cached.
  const std::filesystem::path& entry() const { return entry_; }

  // kLoad: asks the kernel to read the entry's files ahead (POSIX_FADV_WILLNEED), so ORT's
  // page faults on the mapped data file hit the page cache instead of reading from disk in small
  // pieces. ORT reads all of the file during the load (to prepack) or the first token anyway.
  void Prefetch() const;
  // kBuild: adds the session config entries that make ORT write the entry into the temp folder.
  void AddBuildOptions(Ort::SessionOptions& so) const;
  // kBuild, after the session was created: syncs, writes the manifest, renames into place. Logs
  // what it did; on failure logs why and leaves no entry (never throws).
  void Commit();
  // kLoad failed (ORT could not create a session from the entry): logs `why`, removes the
  // entry and turns this into a build into a fresh temp folder (kBuild), or kOff if that fails.
  void RebuildAfterFailedLoad(const std::string& why);
  // kBuild failed (ORT could not create the session while writing the entry; e.g. disk full):
  // logs `why`, removes the temp folder, and turns this into kOff.
  void GiveUpBuild(const std::string& why);

  static constexpr const char* kGraphFile = "model.onnx";
  static constexpr const char* kDataFile = "model.onnx.data";
  static constexpr const char* kManifestFile = "manifest.json";

 private:
  ModelCache() = default;
  bool StartBuild();  // creates temp_; false (logged) when the root cannot be written

  Action action_ = Action::kOff;
  std::filesystem::path model_path_;  // canonical source model file
  std::filesystem::path root_;
  std::filesystem::path entry_;
  std::filesystem::path temp_;
  std::string key_;
  std::string fingerprint_;  // of the model files alone (stale-entry detection)
  std::string inputs_;       // readable text of the graph-changing inputs (manifest)
  double build_started_ms_ = 0;
  bool save_prepacked_ = false;
};

}  // namespace ebb::internal
