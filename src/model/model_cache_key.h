// What identifies a compiled-model cache entry (model_cache.h): the model files' fingerprint and
// every input that changes the compiled graph (the session options, the providers, the ORT
// version, the CPU's instruction-set level, ebb's own rewrites). Both texts are stored in the
// entry's manifest, so `cat manifest.json` says what an entry was built for.
// Thread-safety: pure functions of their arguments and of the files they read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ebb/options.h"
#include "ort/provider_options.h"
#include "ort/session_options.h"

namespace ebb::internal {

// The manifest format; an entry of another format is rebuilt. 2: aligned prepacked blobs.
inline constexpr const char* kModelCacheFormat = "ebb-model-cache/2";

// The model file and its external data files, sorted.
std::vector<std::filesystem::path> ModelFiles(const std::filesystem::path& model_path);
// A file's modification time in nanoseconds; 0 when it cannot be read.
int64_t MtimeNs(const std::filesystem::path& p);
// Cheap fingerprint of the model files (see the definition for what it covers); `text` receives
// its readable form.
// `failure` receives why when a model file could not be read (its size or either end), the
// fingerprint then being unusable: a key from it would not find the entries of these files, and
// a build would remove those entries as stale.
std::string Fingerprint(const std::filesystem::path& model_path, std::string* text,
                        std::string* failure);
// The cache key's lines for the cpu_ops option (its value, e.g. "auto") on a CPU with
// `cpu_flags` (CpuFlags()): none when off; "cpu_ops=V", plus "cpu_ops_matmul=avx2" where the
// int4 matmul moves and runs its AVX2 set. Part of GraphInputs.
std::string CpuOpsKeyLines(const std::string& cpu_ops, const std::set<std::string>& cpu_flags);
// Everything but the model files that changes the compiled graph, as readable text. `conflict`
// receives the first session option the cache cannot honour (it sets it itself), `non_cpu` the
// first provider other than the CPU; both stay empty when there is none.
std::string GraphInputs(const EffectiveSessionOptions& session,
                        const std::vector<ProviderOptions>& config_providers,
                        const ModelOptions& options, std::string* conflict, std::string* non_cpu);
// The CPU features MLAS picks its kernels (and so its prepacked layouts) by, as a short text:
// e.g. "x86-64 avx2 fma f16c avx512f avx512bw avx512vl avx512vnni amx". Part of the cache key.
std::string IsaLevel();

}  // namespace ebb::internal
