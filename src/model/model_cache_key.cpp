#include "model/model_cache_key.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/files.h"
#include "core/hash.h"
#include "ebb/version.h"
#include "model/cpu_ops_rewrite.h"
#include "ort/cpu_kernels.h"
#include "ort/provider_plan.h"
#include "platform/file.h"

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1ull << 20;

// Session options that only affect how the graph runs (threads, allocators, spinning), not what
// ORT compiles; every other key, ebb's or ORT's, is part of the key. Unknown keys count, so an
// option this list forgets costs a rebuild, never a wrong graph.
bool RuntimeOnlyKey(const std::string& k) {
  static const std::set<std::string> kKeys = {
      "intra_op_num_threads",
      "inter_op_num_threads",
      "enable_cpu_mem_arena",
      "enable_mem_pattern",
      "execution_mode",
      "use_env_allocators",
      "arena_extend_strategy",
      "session.use_env_allocators",
      "session.intra_op.allow_spinning",
      "session.inter_op.allow_spinning",
      "session.intra_op_thread_affinities",
      "session.dynamic_block_base",
      "session.force_spinning_stop",
      "session.use_device_allocator_for_initializers",
      "session.set_denormal_as_zero",
      "profile_file_prefix",
  };
  return kKeys.count(k) > 0 || k.starts_with("arena.");
}

// Keys the cache sets itself, or that change how the file is read: with any of them the user is
// managing ORT's model files, and the cache stays out of the way.
bool ConflictingKey(const std::string& k) {
  return k == "session.optimized_model_filepath" ||
         k == "session.save_external_prepacked_constant_initializers" ||
         k == "session.optimized_model_external_initializers_file_name" ||
         k == "session.optimized_model_external_initializers_min_size_in_bytes" ||
         k == "session.load_model_format" || k == "session.save_model_format" ||
         k == "session.model_external_initializers_file_folder_path" || k == "ep.context_enable";
}

}  // namespace

int64_t MtimeNs(const fs::path& p) {
  platform::FileInfo info;
  if (platform::StatPath(p, &info) != 0) return -1;
  return info.mtime_ns;
}

// The model file and its external-data files (regular files in the folder whose name starts
// with the model file's name, as Model::weights_bytes counts them), sorted by name.
std::vector<fs::path> ModelFiles(const fs::path& model_path) {
  std::vector<fs::path> files{model_path};
  std::error_code ec;
  const std::string stem = model_path.filename().string();
  for (const auto& e : fs::directory_iterator(model_path.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name != stem && name.starts_with(stem) && e.is_regular_file(ec)) files.push_back(e.path());
  }
  std::sort(files.begin() + 1, files.end());
  return files;
}

// Cheap fingerprint of the model files: name, size, mtime and XXH64 of the first and last MiB
// of each. A full hash would read every byte on every load (measured: 1.2-1.5 GB/s here, so
// seconds for a phi-sized model, more than the cache saves); an edit that keeps size and mtime
// and spares both ends is not detected.
std::string Fingerprint(const fs::path& model_path, std::string* text, std::string* failure) {
  Hash64 h;
  std::ostringstream readable;
  failure->clear();
  for (const auto& f : ModelFiles(model_path)) {
    std::error_code ec;
    const uint64_t size = fs::file_size(f, ec);
    Hash64 ends;
    int err = ec ? ec.value() : 0;
    bool ok = !ec && HashFileRange(f, 0, kMiB, ends, &err);
    if (ok && size > kMiB) ok = HashFileRange(f, std::max(kMiB, size - kMiB), kMiB, ends, &err);
    if (!ok && failure->empty()) {
      *failure = f.string() + " cannot be read (" + DescribeErrno(err) + ")";
    }
    readable << f.filename().string() << " size=" << size << " mtime_ns=" << MtimeNs(f)
             << " ends=" << Hex64(ends.Digest()) << "\n";
  }
  *text = readable.str();
  h.Update(*text);
  return Hex64(h.Digest());
}

std::string CpuOpsKeyLines(const std::string& cpu_ops, const std::set<std::string>& cpu_flags) {
  // Only when on, so the entries built before the option existed keep their key.
  if (cpu_ops == "off") return "";
  std::string out = "cpu_ops=" + cpu_ops + "\n";
  // The int4 matmul moves on a CPU without AVX-512 VNNI only since its AVX2 set exists: an entry
  // built on such a CPU before then holds the graph with its matmuls left to MLAS, so this line
  // says that the matmul moves (and entries of VNNI CPUs keep their keys).
  std::string note;
  if (ResolveCpuOps(cpu_ops, cpu_flags, &note).matmul &&
      CpuOpsIsasFor(cpu_flags).matmul == "AVX2") {
    out += "cpu_ops_matmul=avx2\n";
  }
  return out;
}

// Everything but the model files that changes the compiled graph, as readable text (stored in
// the manifest, so `cat manifest.json` says what an entry was built for).
std::string GraphInputs(const EffectiveSessionOptions& session,
                        const std::vector<ProviderOptions>& config_providers,
                        const ModelOptions& options, std::string* conflict, std::string* non_cpu) {
  const auto& merged = session.entries();
  std::ostringstream out;
  out << "format=" << kModelCacheFormat << "\nort=" << OrtVersion() << "\nisa=" << IsaLevel()
      << "\n";
  if (session.Find("graph_optimization_level") == nullptr)
    out << "graph_optimization_level=all (ebb)\n";
  // ebb's own graph rewrite (last_logits.h) changes the compiled graph too.
  out << "prefill_logits=" << (options.last_position_logits ? "last" : "all") << "\n";
  out << CpuOpsKeyLines(options.cpu_ops, CpuFlags());
  for (const auto& [k, v] : merged) {
    if (ConflictingKey(k) && conflict->empty()) *conflict = k;
    if (k == "custom_ops_library") {
      // As registered: a relative path is the working directory's (the config's are already
      // absolute), so the same spelling from two folders is two libraries.
      std::error_code ec;
      out << "session." << k << "=" << fs::absolute(v, ec).lexically_normal().string() << "\n";
    } else if (!RuntimeOnlyKey(k)) {
      out << "session." << k << "=" << v << "\n";
    }
  }
  // The providers as the session gets them (ResolveProviders); sorted by name, as before, so
  // that existing entries keep their keys.
  const ProviderPlan plan = ResolveProviders(config_providers, options);
  const std::map<std::string, std::map<std::string, std::string>>& providers = plan.options;
  for (const auto& [ep, opts] : providers) {
    if (ep != "cpu" && non_cpu->empty()) *non_cpu = ep;
    out << "provider=" << ep;
    for (const auto& [k, v] : opts) out << " " << k << "=" << v;
    out << "\n";
  }
  return out.str();
}

std::string IsaLevel() {
  // MLAS dispatches on these (mlasi.h / platform.cpp: AVX2+FMA, AVX-512 F/BW/DQ/VL ("core"),
  // AVX-512 VNNI, AVX-VNNI, AMX; NEON dot product and i8mm on Arm). Other flags do not change a
  // kernel or a packed layout, so CPUs that differ only in them share entries.
  static const char* const kFlags[] = {
      "avx",      "avx2",     "fma",         "f16c",     "avx512f",     "avx512bw",
      "avx512dq", "avx512vl", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
      "amx_tile", "amx_int8", "amx_bf16",    "asimd",    "asimddp",     "i8mm",
      "sve",      "sve2",     "fphp",        "bf16"};
  const std::set<std::string> have = CpuFlags();
#if defined(__x86_64__)
  std::string out = "x86-64";
#elif defined(__aarch64__)
  std::string out = "aarch64";
#else
  std::string out = "other";
#endif
  for (const char* f : kFlags) {
    if (have.count(f)) out += std::string(" ") + f;
  }
  return out;
}

}  // namespace ebb::internal
