#include "model/model_cache.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/strings.h"
#include "cpu_ops/pack_file.h"
#include "cpu_ops/pack_ledger.h"
#include "ebb/error.h"
#include "ebb/version.h"
#include "model/prepack_chunks.h"
#include "model/prepacked_align.h"
#include "model/probe_run.h"
#include "ort/cpu_kernels.h"
#include "ort/ort_env.h"
#include "ort/provider_plan.h"
#include "platform/file.h"
#include "platform/heap.h"
#include "platform/process.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTempPrefix = ".tmp-";
constexpr uint64_t kMiB = 1ull << 20;

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The blocks of a file the manifest's checksum covers: all of it up to 8 MiB, else the first and
// last MiB and 64 blocks of 64 KiB at evenly spaced offsets.
// `err` (may be null) receives the errno of a failed read.
uint64_t SampledHash(const fs::path& p, uint64_t size, bool* ok, int* err = nullptr) {
  Hash64 h;
  *ok = true;
  if (size <= 8 * kMiB) {
    *ok = HashFileRange(p, 0, size, h, err);
    return h.Digest();
  }
  *ok = HashFileRange(p, 0, kMiB, h, err);
  for (uint64_t i = 0; i < 64 && *ok; ++i)
    *ok = HashFileRange(p, i * (size / 64), 64 << 10, h, err);
  if (*ok) *ok = HashFileRange(p, size - kMiB, kMiB, h, err);
  return h.Digest();
}

std::string ErrnoText(int err) { return DescribeErrno(err); }

// "" when `entry` is complete and matches `key`; else why not (for the log line). `system`
// (may be null) is set when the check itself could not run for want of memory or descriptors:
// nothing is known against the entry then.
std::string VerifyEntry(const fs::path& entry, const std::string& key, bool* system = nullptr) {
  if (system) *system = false;
  const fs::path manifest_path = entry / ModelCache::kManifestFile;
  std::error_code ec;
  if (!fs::exists(manifest_path, ec)) return "it has no manifest (an incomplete write)";
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(ReadRegularFile(manifest_path, 1 << 20, "cache manifest"));
  } catch (const Error& e) {
    if (system) *system = e.code() == ErrorCode::ResourceExhausted;
    return std::string("its manifest is unreadable (") + e.what() + ")";
  } catch (const std::bad_alloc&) {
    if (system) *system = true;
    return "its manifest could not be read (out of memory)";
  } catch (const std::exception& e) {
    return std::string("its manifest is unreadable (") + e.what() + ")";
  }
  try {
    if (m.at("format").get<std::string>() != kModelCacheFormat)
      return "it was written by another version";
    if (m.at("key").get<std::string>() != key) return "its manifest names another key";
    bool has_graph = false;
    for (const auto& f : m.at("files")) {
      const std::string name = f.at("name").get<std::string>();
      if (name.find('/') != std::string::npos || name == "..") return "its manifest is invalid";
      has_graph |= name == ModelCache::kGraphFile;
      const fs::path p = entry / name;
      const uint64_t want = f.at("size").get<uint64_t>();
      const uint64_t size = fs::file_size(p, ec);
      if (ec) return name + " is missing";
      if (size != want) {
        return name + " is " + std::to_string(size) + " bytes, the manifest says " +
               std::to_string(want) + " (truncated or overwritten)";
      }
      if (MtimeNs(p) != f.at("mtime_ns").get<int64_t>()) {
        return name + " was modified after the cache was written";
      }
      bool ok = false;
      int err = 0;
      const std::string sum = Hex64(SampledHash(p, size, &ok, &err));
      if (!ok) {
        if (system) *system = IsResourceErrno(err);
        return name + " cannot be read (" + ErrnoText(err) + ")";
      }
      if (sum != f.at("xxh64").get<std::string>()) return name + " fails its checksum (corrupt)";
    }
    if (!has_graph) return "its manifest lists no model.onnx";
  } catch (const nlohmann::json::exception& e) {
    return std::string("its manifest is invalid (") + e.what() + ")";
  }
  return "";
}

// Reads an entry's manifest for stale-entry detection; empty json when unreadable.
nlohmann::json ReadManifest(const fs::path& entry) {
  try {
    return nlohmann::json::parse(
        ReadRegularFile(entry / ModelCache::kManifestFile, 1 << 20, "cache manifest"));
  } catch (const std::exception&) {
    return {};
  }
}

void RemoveAll(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) EBB_LOG_WARN("model cache: could not remove {}: {}", p.string(), ec.message());
}

// Removes, under `root`: temp folders whose process is gone (a crash or kill -9 mid-write), and
// entries built for `source` from other model contents (the model changed; they can never be
// used again). Entries for other options of the same model are kept.
void CleanUp(const fs::path& root, const fs::path& source, const std::string& fingerprint) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory(ec)) continue;
    if (name.starts_with(kTempPrefix)) {
      // .tmp-<key>-<pid>-<n>
      const auto parts = Split(name.substr(std::strlen(kTempPrefix)), '-');
      if (parts.size() != 3) continue;
      const long pid = std::strtol(parts[1].c_str(), nullptr, 10);
      if (pid > 0 && pid != platform::CurrentPid() && !platform::ProcessAlive(pid)) {
        EBB_LOG_INFO(
            "model cache: removing {}, an unfinished cache write of process {}, which is gone "
            "(it crashed or was killed while writing)",
            e.path().string(), pid);
        RemoveAll(e.path());
      }
      continue;
    }
    const nlohmann::json m = ReadManifest(e.path());
    if (!m.is_object() || m.value("source", "") != source.string()) continue;
    if (m.value("source_fingerprint", "") != fingerprint) {
      EBB_LOG_INFO(
          "model cache: removing stale entry {}: the model files changed since it was built",
          e.path().string());
      RemoveAll(e.path());
    }
  }
}

// The folders an entry may be read from, the first being where one is written. "auto": the
// per-user folder, then <model dir>/.ebb-cache (read only: a model folder may ship a cache).
std::vector<fs::path> CandidateRoots(const fs::path& model_path, const std::string& setting) {
  if (setting != "auto") return {fs::path(setting)};
  std::vector<fs::path> roots;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg != nullptr && xdg[0] == '/') {
    roots.push_back(fs::path(xdg) / "ebb" / "models");
  } else if (home != nullptr && home[0] == '/') {
    roots.push_back(fs::path(home) / ".cache" / "ebb" / "models");
  }
  roots.push_back(model_path.parent_path() / ".ebb-cache");
  return roots;
}

// model_cache.dir after its default: "" is $EBB_MODEL_CACHE_DIR when set and not blank, else auto.
std::string ResolveSetting(const std::string& setting) {
  if (!setting.empty()) return setting;
  const char* env = std::getenv("EBB_MODEL_CACHE_DIR");
  const std::string v = env != nullptr ? Trim(env) : std::string();
  return v.empty() ? "auto" : v;
}

// Makes a committed file read-only (0444): an entry is immutable, and a stray write to it fails.
void MakeReadOnly(const fs::path& p) {
  std::error_code ec;
  fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace, ec);
}

uint64_t FolderBytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    if (f.is_regular_file(ec)) total += f.file_size(ec);
  }
  return total;
}

}  // namespace

ModelCache::ModelCache(ModelCache&& o) noexcept
    : action_(o.action_),
      model_path_(std::move(o.model_path_)),
      root_(std::move(o.root_)),
      entry_(std::move(o.entry_)),
      temp_(std::move(o.temp_)),
      key_(std::move(o.key_)),
      fingerprint_(std::move(o.fingerprint_)),
      inputs_(std::move(o.inputs_)),
      max_bytes_(o.max_bytes_),
      build_started_ms_(o.build_started_ms_),
      lock_(std::move(o.lock_)),
      chunks_(std::move(o.chunks_)),
      chunk_bytes_(o.chunk_bytes_),
      build_skipped_(o.build_skipped_),
      no_build_(std::move(o.no_build_)) {
  o.action_ = Action::kOff;
  o.temp_.clear();
}

ModelCache::~ModelCache() {
  if (!temp_.empty()) RemoveAll(temp_);
}

ModelCache ModelCache::Plan(const fs::path& model_path, const std::string& setting,
                            const EffectiveSessionOptions& session,
                            const std::vector<ProviderOptions>& config_providers,
                            const ModelOptions& options) {
  ModelCache c;
  const std::string resolved = ResolveSetting(setting);
  c.max_bytes_ = options.model_cache_max_bytes;
  if (resolved == "off") {
    EBB_LOG_DEBUG("model cache: off (model_cache.dir=off)");
    return c;
  }
  std::string conflict, non_cpu;
  c.inputs_ = GraphInputs(session, config_providers, options, &conflict, &non_cpu) +
              "prepacked_blobs=aligned-" + std::to_string(kAlignment) + "\n";
  if (!conflict.empty()) {
    EBB_LOG_INFO(
        "model cache: not used because session option {} is set (the cache sets it "
        "itself); remove it to use the cache, or set model_cache.dir=off",
        conflict);
    return c;
  }
  if (!non_cpu.empty()) {
    EBB_LOG_INFO(
        "model cache: not used with execution provider {} (only the CPU provider's "
        "compiled graph is cached)",
        non_cpu);
    return c;
  }
  std::error_code ec;
  c.model_path_ = fs::weakly_canonical(model_path, ec);
  if (ec) c.model_path_ = model_path;
  std::string files_text, unreadable;
  c.fingerprint_ = Fingerprint(c.model_path_, &files_text, &unreadable);
  if (!unreadable.empty()) {
    // A key from this fingerprint would miss the entries of these files, and a build would
    // remove them as stale.
    EBB_LOG_WARN("model cache: not used for this load: {}", unreadable);
    c.SkipThisLoad();
    return c;
  }
  c.key_ = Hex64(HashBytes((c.fingerprint_ + "\n" + c.inputs_).data(),
                           c.fingerprint_.size() + 1 + c.inputs_.size()));
  const std::string entry_name = c.model_path_.filename().string() + "-" + c.key_;

  const std::vector<fs::path> roots = CandidateRoots(c.model_path_, resolved);
  // A valid entry in any candidate root is loaded (a read-only model folder may still carry one).
  for (const auto& root : roots) {
    const fs::path entry = root / entry_name;
    if (!fs::is_directory(entry, ec)) continue;
    bool system = false;
    const std::string bad = VerifyEntry(entry, c.key_, &system);
    if (bad.empty()) {
      c.action_ = Action::kLoad;
      c.root_ = root;
      c.entry_ = entry;
      return c;
    }
    if (system) {
      EBB_LOG_WARN(
          "model cache: cannot check {} now ({}): the process is out of memory or file "
          "descriptors; the entry is kept and this load goes on without the cache",
          entry.string(), bad);
      c.SkipThisLoad();
      return c;
    }
    EBB_LOG_WARN("model cache: rebuilding {}: {}", entry.string(), bad);
    RemoveAll(entry);
  }
  // Build into the first root that can be created (WriteOptimizedGraph, then BuildEntry).
  for (const auto& root : roots) {
    std::error_code mk;
    fs::create_directories(root, mk);
    if (mk || !fs::is_directory(root, mk) || !platform::CanWrite(root)) continue;
    c.root_ = root;
    c.entry_ = root / entry_name;
    c.action_ = Action::kBuild;
    return c;
  }
  std::string tried;
  for (const auto& r : roots) tried += (tried.empty() ? "" : ", ") + r.string();
  EBB_LOG_WARN(
      "model cache: no writable cache folder ({}); loading {} without a cache. Set "
      "model_cache.dir to a writable folder, or model_cache.dir=off to silence this",
      tried, model_path.string());
  return c;
}

bool ModelCache::StartBuild() {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec || !fs::is_directory(root_, ec)) {
    EBB_LOG_INFO("model cache: cannot create {} ({})", root_.string(),
                 ec ? ec.message() : std::string("not a folder"));
    return false;
  }
  CleanUp(root_, model_path_, fingerprint_);
  temp_ = root_ / (std::string(kTempPrefix) + key_ + "-" + std::to_string(platform::CurrentPid()) +
                   "-" + std::to_string(counter.fetch_add(1)));
  if (const int err = platform::MakeDirectory(temp_); err != 0) {
    EBB_LOG_INFO("model cache: cannot write in {} ({})", root_.string(), ErrnoText(err));
    temp_.clear();
    return false;
  }
  action_ = Action::kBuild;
  build_started_ms_ = NowMs();
  EBB_LOG_INFO(
      "model cache: building {} for {} (first load with these options: the optimised graph "
      "now, the prepacked weights in the background; later loads map it)",
      entry_.string(), model_path_.string());
  return true;
}

void ModelCache::Prefetch() const {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(entry_, ec)) {
    platform::PrefetchFile(e.path());  // a hint; failure costs nothing
  }
}

void ModelCache::MarkUsed() const {
  if (action_ != Action::kLoad) return;
  platform::TouchNow(entry_);  // best effort (a read-only root)
}

bool ModelCache::Commit() {
  if (action_ != Action::kBuild || temp_.empty()) return false;
  try {
    nlohmann::json files = nlohmann::json::array();
    uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(temp_)) {
      if (!e.is_regular_file()) continue;
      const fs::path p = e.path();
      if (platform::SyncFile(p) != 0) throw std::runtime_error("cannot sync " + p.string());
      MakeReadOnly(p);
      const uint64_t size = fs::file_size(p);
      bool ok = false;
      const std::string sum = Hex64(SampledHash(p, size, &ok));
      if (!ok) throw std::runtime_error("cannot read back " + p.string());
      files.push_back({{"name", p.filename().string()},
                       {"size", size},
                       {"mtime_ns", MtimeNs(p)},
                       {"xxh64", sum}});
      total += size;
    }
    if (!fs::exists(temp_ / kGraphFile)) {
      throw std::runtime_error("ONNX Runtime wrote no optimised model");
    }
    nlohmann::ordered_json m;
    m["format"] = kModelCacheFormat;
    m["key"] = key_;
    m["source"] = model_path_.string();
    m["source_fingerprint"] = fingerprint_;
    m["inputs"] = inputs_;
    m["files"] = files;
    const fs::path tmp_manifest = temp_ / "manifest.json.partial";
    {
      std::ofstream out(tmp_manifest, std::ios::binary | std::ios::trunc);
      out << m.dump(1) << "\n";
      if (!out.flush()) throw std::runtime_error("cannot write " + tmp_manifest.string());
    }
    int err = platform::SyncFile(tmp_manifest);
    if (err == 0) err = platform::Rename(tmp_manifest, temp_ / kManifestFile);
    if (err == 0) err = platform::SyncDirectory(temp_);
    if (err != 0) {
      throw std::runtime_error("cannot write the manifest in " + temp_.string() + ": " +
                               ErrnoText(err));
    }
    err = platform::Rename(temp_, entry_);
    if (err != 0) {
      if (err == EEXIST || err == ENOTEMPTY) {
        EBB_LOG_INFO("model cache: another process finished {} first; keeping its copy",
                     entry_.string());
        RemoveAll(temp_);
        temp_.clear();
        return false;
      }
      throw std::runtime_error("cannot rename " + temp_.string() + " to " + entry_.string() + ": " +
                               ErrnoText(err));
    }
    temp_.clear();
    platform::SyncDirectory(root_);
    EBB_LOG_INFO("model cache: built {} ({} in {} files) {:.0f} ms after the load began",
                 entry_.string(), FormatBytes(total), files.size(), NowMs() - build_started_ms_);
    return true;
  } catch (const std::exception& e) {
    EBB_LOG_WARN(
        "model cache: could not write {} ({}); the model is loaded, the next load "
        "tries again",
        entry_.string(), e.what());
    RemoveAll(temp_);
    temp_.clear();
    return false;
  }
}

void ModelCache::RebuildAfterFailedLoad(const std::string& why) {
  if (!no_build_.empty()) {
    EBB_LOG_WARN(
        "model cache: removing {}: ONNX Runtime could not load it ({}); not rebuilt in this "
        "load ({})",
        entry_.string(), EscapeForMessage(why, 400), no_build_);
    RemoveAll(entry_);
    SkipThisLoad();
    return;
  }
  EBB_LOG_WARN("model cache: rebuilding {}: ONNX Runtime could not load it ({})", entry_.string(),
               EscapeForMessage(why, 400));
  RemoveAll(entry_);
  action_ = root_.empty() ? Action::kOff : Action::kBuild;
}

void ModelCache::SkipThisLoad() {
  action_ = Action::kOff;
  build_skipped_ = true;
}

void ModelCache::NoBuild(const std::string& why) {
  no_build_ = why;
  if (action_ != Action::kBuild) return;
  EBB_LOG_INFO("model cache: not building {} in this load: {}; a later load builds it",
               entry_.string(), why);
  SkipThisLoad();
}

void ModelCache::SkipAfterFailedLoad(const std::string& why) {
  EBB_LOG_WARN(
      "model cache: could not load {}: the process ran out of memory, threads or file "
      "descriptors ({}); the entry is kept and this load goes on without it. If every load "
      "says this, raise the limit (ulimit -v, ulimit -n; sysctl vm.max_map_count when the "
      "mappings run out), or set model_cache.dir=off",
      entry_.string(), EscapeForMessage(why, 400));
  SkipThisLoad();
}

// An advisory lock on <root>/.lock-<key>, held from the optimised graph's write to the commit.
// When the lock file cannot be opened, it is not held and not busy: the build goes ahead unlocked.
class BuildLock {
 public:
  explicit BuildLock(const fs::path& path)
      : path_(path), lock_(path, platform::FileLock::Wait::kNo) {}
  ~BuildLock() {
    // Removed while still held (the lock is released after, when lock_ closes): a process that
    // opened it meanwhile just builds again.
    if (lock_.held()) platform::RemoveFile(path_);
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  bool busy() const { return lock_.busy(); }  // another process holds it

 private:
  fs::path path_;
  platform::FileLock lock_;
};

namespace {

// Session options for a session whose only product is the files ORT saves: its graph, with every
// initializer of 1 KiB or more in `dir`/kDataFile, and nothing left allocated once it is gone. ORT
// warns that an optimised graph may hold hardware-specific optimisations: expected (the key carries
// the ISA level); errors still show.
Ort::SessionOptions SavingOptions(const Ort::SessionOptions& base, const fs::path& dir) {
  Ort::SessionOptions so = base.Clone();
  so.SetLogSeverityLevel(ORT_LOGGING_LEVEL_ERROR);
  // The session's own arena, freed with it: memory it took from a shared env arena would stay
  // there after the session is gone.
  so.AddConfigEntry("session.use_env_allocators", "0");
  so.SetOptimizedModelFilePath((dir / ModelCache::kGraphFile).c_str());
  so.AddConfigEntry("session.optimized_model_external_initializers_file_name",
                    ModelCache::kDataFile);
  so.AddConfigEntry("session.optimized_model_external_initializers_min_size_in_bytes", "1024");
  // Such a session never runs: ebb's int4 matmul kernel (cpu_ops) need not repack its weights.
  so.AddConfigEntry(ebb_cpu_ops::kNoPackKey, "1");
  return so;
}

constexpr const char* kOptimizedDir = "optimized";

}  // namespace

bool ModelCache::WriteOptimizedGraph(BuildJob& job) {
  if (action_ != Action::kBuild) return false;
  if (!no_build_.empty()) {
    SkipThisLoad();
    return false;
  }
  auto lock = std::make_unique<BuildLock>(root_ / (".lock-" + key_));
  if (lock->busy()) {
    EBB_LOG_INFO("model cache: another process is building {}; not building it twice",
                 entry_.string());
    SkipThisLoad();
    return false;
  }
  std::error_code ec;
  if (fs::is_directory(entry_, ec) && VerifyEntry(entry_, key_).empty()) {
    EBB_LOG_INFO("model cache: {} was built meanwhile; loading it", entry_.string());
    action_ = Action::kLoad;
    return false;
  }
  if (!StartBuild()) {
    SkipThisLoad();
    return false;
  }
  lock_ = std::move(lock);
  const fs::path dir = temp_ / kOptimizedDir;
  try {
    fs::create_directories(dir);
    // No prepacking: the session holds the graph and what its optimisers made, and ORT's saver
    // copies one initializer at a time (measured on the phi shape: 389 MiB anonymous at most,
    // against 2.0 GiB for a session that prepacks).
    Ort::SessionOptions so = SavingOptions(job.session_options, dir);
    so.AddConfigEntry("session.disable_prepacking", "1");
    job.create_source(std::move(so));  // the session itself is not needed: ORT wrote the files
    platform::ReturnFreeHeap();
    chunk_bytes_ = job.chunk_bytes;
    chunks_ = WritePrepackChunks(dir / kGraphFile, chunk_bytes_);
    EBB_LOG_INFO(
        "model cache: wrote the optimised graph of {} in {:.0f} ms ({} prepacking nodes in {} "
        "chunks for the background build)",
        model_path_.string(), NowMs() - build_started_ms_, chunks_.num_nodes,
        chunks_.graphs.size());
    return true;
  } catch (const std::exception& e) {
    // Info, not a warning: a model ORT cannot load fails here first, and the load that follows
    // reports its error (a full disk or a read-only folder says so in `e`).
    EBB_LOG_INFO(
        "model cache: not caching {}: writing the optimised graph failed ({}); loading it "
        "without the cache",
        model_path_.string(), EscapeForMessage(OneLine(e.what()), 400));
    RemoveAll(temp_);
    temp_.clear();
    lock_.reset();
    SkipThisLoad();
    return false;
  }
}

uint64_t ModelCache::build_transient_bytes() const {
  return 2 * std::max(chunk_bytes_, chunks_.largest_chunk_bytes) + (128ull << 20);
}

bool ModelCache::BuildEntry(BuildJob& job) {
  if (action_ != Action::kBuild || temp_.empty()) return false;
  const fs::path optimized = temp_ / kOptimizedDir / kGraphFile;
  const PrepackChunks& chunks = chunks_;
  std::string step;
  try {
    // Each chunk's session prepacks its weights and ORT saves them with their blobs; one chunk
    // at a time, one intra-op thread, so the build holds about a chunk of weights beside the
    // live session's.
    std::vector<fs::path> overlays;
    for (size_t i = 0; i < chunks.graphs.size(); ++i) {
      step = "prepacking chunk " + std::to_string(i + 1) + " of " +
             std::to_string(chunks.graphs.size());
      const fs::path out = temp_ / ("prepacked-" + std::to_string(i));
      fs::create_directories(out);
      Ort::SessionOptions so = SavingOptions(job.session_options, out);
      so.SetIntraOpNumThreads(1);
      so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
      so.AddConfigEntry("session.save_external_prepacked_constant_initializers", "1");
      { Ort::Session saved(OrtEnvironment(), chunks.graphs[i].c_str(), so); }
      // Per chunk: glibc raises its mmap threshold as large blocks are freed, so a chunk's
      // buffers can come back from the heap, which only a trim returns. A trim holds the heap's
      // locks for about a millisecond, 32 times over a build of tens of seconds.
      platform::ReturnFreeHeap();
      overlays.push_back(out / kGraphFile);
    }
    step = "aligning the prepacked blobs";
    const AlignedExternalData a =
        AlignExternalData(optimized, temp_ / kGraphFile, kDataFile, kAlignment, overlays);
    fs::remove_all(temp_ / kOptimizedDir);
    for (const auto& o : overlays) fs::remove_all(o.parent_path());
    EBB_LOG_DEBUG(
        "model cache: {} prepacking nodes in {} chunks (largest {}; {} not carried); aligned {} "
        "tensors, {} from the chunks, {} prepacked blobs ({} regions, {} were misaligned) to {} "
        "bytes",
        chunks.num_nodes, chunks.graphs.size(), FormatBytes(chunks.largest_chunk_bytes),
        chunks.num_skipped, a.num_tensors, a.num_from_overlays, a.num_prepacked_blobs,
        a.num_regions, a.num_were_misaligned, kAlignment);
    step = "checking the entry against the normal load";
    {
      Ort::SessionOptions so = job.session_options.Clone();
      so.SetIntraOpNumThreads(1);
      so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
      // ebb's int4 matmul kernel (cpu_ops) writes its repacked weights into the entry and runs
      // the probe from those files, which every later load of the entry maps (pack_file.h).
      so.AddConfigEntry(ebb_cpu_ops::kPackDirKey, temp_.c_str());
      so.AddConfigEntry(ebb_cpu_ops::kPackWriteKey, "1");
      // A kernel whose pack file could not be written, or mapped back once written, runs from
      // anonymous memory and says nothing (cpu_ops/int4_rows_op.cpp); this ledger counts it.
      // Such an entry could lack the file, and every load of it would repack the weights again,
      // so it is not committed. The ledger is libebb's: a folder that names libebb_cpu_ops.so
      // runs that library's copy of the kernels, whose registry does not know it, so this check
      // covers the option cpu_ops only (pack_ledger.h).
      const ebb_cpu_ops::PackLedger unwritten;
      so.AddConfigEntry(ebb_cpu_ops::kPackLedgerKey, unwritten.id().c_str());
      Ort::Session probe_session(OrtEnvironment(), (temp_ / kGraphFile).c_str(), so);
      if (unwritten.anon_bytes() > 0) {
        throw std::runtime_error(
            FormatBytes(unwritten.anon_bytes()) +
            " of ebb's int4 matmul packs could not be written into the entry or mapped back "
            "(the disk is full, or the process is out of address space or mappings)");
      }
      const std::vector<float> got = job.probe(probe_session);
      const std::vector<float> want = job.reference();
      const std::string diff = CompareProbeOutputs(want, got);
      if (!diff.empty()) {
        throw std::runtime_error("the cached graph computes other outputs than the model (" + diff +
                                 ")");
      }
    }
    platform::ReturnFreeHeap();
  } catch (const std::exception& e) {
    EBB_LOG_WARN("model cache: not caching {}: {} failed ({}); loads stay uncached",
                 model_path_.string(), step, EscapeForMessage(OneLine(e.what()), 400));
    RemoveAll(temp_);
    temp_.clear();
    lock_.reset();
    return false;
  }
  const bool committed = Commit();
  lock_.reset();
  if (!committed) return false;
  EnforceBudget();
  return true;
}

std::vector<fs::path> ModelCache::WeightFiles(const fs::path& entry) {
  std::vector<fs::path> files = {entry / kDataFile};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(entry, ec)) {
    if (e.path().extension() == ".pack" && e.is_regular_file(ec)) files.push_back(e.path());
  }
  std::sort(files.begin() + 1, files.end());
  return files;
}

void ModelCache::EnforceBudget() const {
  if (max_bytes_ == 0 || root_.empty()) return;
  struct Item {
    fs::path path;
    uint64_t bytes;
    int64_t used_ns;
  };
  std::vector<Item> items;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory(ec) || name.starts_with(kTempPrefix)) continue;
    if (!fs::exists(e.path() / kManifestFile, ec)) continue;
    const uint64_t bytes = FolderBytes(e.path());
    items.push_back({e.path(), bytes, MtimeNs(e.path())});
    total += bytes;
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.used_ns < b.used_ns; });
  for (const auto& it : items) {
    if (total <= max_bytes_) break;
    if (it.path == entry_) continue;  // the entry just built stays
    // Safe under a process that maps it: unlinked files stay valid for their mappings.
    EBB_LOG_INFO(
        "model cache: removing {} ({}), the least recently used entry: the cache folder holds "
        "{}, over model_cache.max_bytes={}",
        it.path.string(), FormatBytes(it.bytes), FormatBytes(total), FormatBytes(max_bytes_));
    RemoveAll(it.path);
    total -= std::min(total, it.bytes);
  }
}

}  // namespace ebb::internal
