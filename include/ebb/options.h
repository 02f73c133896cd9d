// ebb/options.h — the one option vocabulary of every surface, and a model's load-time options.
//
// Every key ebb knows is a row of OptionTable(): its type, unit, default, scope and a one-line
// doc. The C++ setters (RuntimeOptions::Set, ModelOptions::Set, GeneratorParams::Set,
// ModelControls::SetRunOption), the CLI flags (--option, --session-option, --run-option) and its
// help, and docs/options.md all read that table, so a key means the same thing everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ebb/export.h"

namespace ebb {

// Where a key is accepted. A key may have several scopes (e.g. kv_cache.mode: model default and
// per-request override).
enum class OptionScope : unsigned {
  kRuntime = 1,     // process-wide: RuntimeOptions (memory.limit, arena.*)
  kModel = 2,       // ebb's load-time keys: ModelOptions::Set("kv_cache.mode", ...)
  kSession = 4,     // ORT session options ebb applies with typed setters: session_options.<key>
  kRequest = 8,     // one generation: GeneratorParams::Set("temperature", ...)
  kRunOption = 16,  // ORT run config entries forwarded to every Run(): run_options.<key>
};

enum class OptionType { kBool, kInt, kFloat, kSize, kEnum, kString };

struct OptionSpec {
  std::string_view key;
  OptionType type;
  unsigned scopes;                 // OptionScope bits
  std::string_view unit;           // "bytes", "tokens", "requests", "threads", or ""
  std::string_view default_value;  // as the docs show it
  std::string_view values;         // enum choices "a|b", or a range "0 to 1"; "" = any of type
  std::string_view doc;            // one line
  // Other spellings of enum choices, "ALIAS=choice|ALIAS=choice": ONNX Runtime's own names
  // (execution_mode ORT_SEQUENTIAL, arena_extend_strategy 0), so that a value copied from ORT's
  // docs or a genai_config.json means the same on every surface. Every setter and the
  // genai_config.json path accept them and read them as the choice. "" = none.
  std::string_view aliases = {};
};

EBB_API std::span<const OptionSpec> OptionTable();
// The row for `key`, or nullptr.
EBB_API const OptionSpec* FindOption(std::string_view key);
inline bool HasScope(const OptionSpec& spec, OptionScope scope) {
  return (spec.scopes & static_cast<unsigned>(scope)) != 0;
}
EBB_API std::string_view OptionScopeName(OptionScope scope);
EBB_API std::string_view OptionTypeName(OptionType type);

// How a generator's KV cache is laid out in memory (docs/memory.md).
enum class KvMode {
  kStatic,   // reserve max_length up front; past and present share one buffer where the graph
             // supports it (GroupQueryAttention). The fast path.
  kDynamic,  // grow in chunks as the sequence grows; memory tracks the tokens actually used.
};

EBB_API std::string_view KvModeName(KvMode mode);
// Parses "static" | "dynamic"; throws ebb::Error(InvalidArgument) otherwise.
EBB_API KvMode ParseKvMode(std::string_view name);

// Parses a byte size: plain bytes ("1048576") or with a binary/decimal unit ("512MiB", "2GiB",
// "1.5GB", "64KiB"). Throws ebb::Error(InvalidArgument) naming `what` and the accepted forms.
EBB_API uint64_t ParseByteSize(std::string_view text, std::string_view what);

// Options applied when a model is loaded. Precedence: built-in defaults, then the model's
// genai_config.json, then these.
struct EBB_API ModelOptions {
  // ORT session options. Typed keys (intra_op_num_threads, enable_cpu_mem_arena, ...) are
  // applied with ORT's setters; any other key is passed to ORT as a session config entry (with a
  // warning naming the closest known key when ORT's headers do not list it).
  std::map<std::string, std::string> session_options;
  // Per execution provider, e.g. {"cuda": {"gpu_mem_limit": "2147483648"}}.
  std::map<std::string, std::map<std::string, std::string>> provider_options;
  // Defaults for every Run() (ORT run config entries).
  std::map<std::string, std::string> run_options;

  // ebb's own keys (docs/options.md):
  KvMode kv_mode = KvMode::kStatic;     // kv_cache.mode
  uint64_t kv_max_bytes = 0;            // kv_cache.max_bytes: per-model KV budget; 0 = none
  uint64_t kv_retain_bytes = 0;         // kv_cache.retain_bytes: freed KV kept for reuse
  int32_t kv_chunk_tokens = 256;        // kv_cache.chunk_tokens: dynamic-mode growth step
  int32_t prefill_chunk_size = 256;     // prefill_chunk_size: tokens per prefill Run; 0 = all
  uint64_t prefix_cache_max_bytes = 0;  // prefix_cache.max_bytes: KV of request prefixes kept
                                        // for reuse (docs/memory.md "Prefix cache"); 0 = off
  uint64_t constraint_cache_max_bytes =
      64ull << 20;                  // constraint_cache.max_bytes: compiled
                                    // output constraints (JSON Schema, regex, grammar) kept
                                    // for reuse, with their token masks; least recently
                                    // used first out (docs/structured_output.md)
  uint64_t memory_limit_bytes = 0;  // memory.limit: sets the runtime-wide KV budget of all
                                    // models (Runtime::SetMemoryLimit); 0 = leave it as is
  uint32_t shrink_every = 0;        // memory.shrink_every: shrink every N requests; 0 = off
  uint64_t shrink_above_bytes = 0;  // memory.shrink_above: shrink after a request that ends
                                    // with process RSS above this; 0 = off
  bool release_file_pages = true;   // memory.release_file_pages: after the session is created,
                                    // let the kernel reclaim the model files' resident pages
  // prefill_logits: "last" (true, default) rewrites a decoder's graph at load so that a Run
  // computes the LM head only at the position each row samples (src/model/last_logits.h);
  // "all" (false) loads the graph as it is ([B, S, vocab] logits per Run).
  bool last_position_logits = true;
  // cpu_ops: ebb's own CPU kernels for a decoder's attention and int4 matmuls (docs/cpu_ops.md):
  // "off" (default) = ORT's kernels; "auto" = each kind this CPU can run; "attention" or
  // "matmul" = that kind only. The graph's eligible nodes are moved to the domain ebb.cpu at load
  // (the model's files are not changed); the kernels line (ModelInfo::kernels) names them.
  std::string cpu_ops = "auto";
  // decode_batch.*: concurrent generators of the model decode in one Run() per step
  // (docs/memory.md "Batched decode"). max_rows 1 (default) = off: every generator runs alone.
  int32_t decode_batch_max_rows = 1;  // decode_batch.max_rows: rows per batched step
  // Not an option key: the rows (at most 64) a load uses instead of decode_batch_max_rows 1 when
  // the model's KV is in host memory (a device model refuses rows > 1 only when they are asked
  // for, in decode_batch_max_rows). ModelManager passes ModelManagerOptions::decode_batch_rows
  // (ebb serve: --parallel) to a model whose options do not name decode_batch.max_rows. 1 = off.
  int32_t decode_batch_default_rows = 1;
  bool decode_batch_no_wait = false;        // decode_batch.policy: false = gather, true = no-wait
  int32_t decode_batch_max_wait_us = 2000;  // decode_batch.max_wait_us: gather window
  // decode_batch.prefill_chunk: tokens per chunk of a member's prompt while other members are
  // decoding (between chunks the batched steps run); 0 = prefill_chunk_size.
  int32_t decode_batch_prefill_chunk = 32;
  // model_cache.dir: where compiled graphs and ORT's prepacked weights are cached, so that later
  // loads run from file-backed, shareable pages (docs/memory.md "Compiled-model cache").
  // "" (unset, the default) = $EBB_MODEL_CACHE_DIR when set, else "auto"; "auto" = the per-user
  // folder $XDG_CACHE_HOME/ebb/models (else $HOME/.cache/ebb/models); "off" = never read or
  // write a cache; else a folder. A load without an entry is a normal load; the entry is built
  // afterwards, in the background, at low priority, and used from the next load on.
  std::string model_cache_dir;
  // model_cache.max_bytes: disk budget of the cache folder; after an entry is built, the least
  // recently used entries are removed until the folder fits. 0 = no budget.
  uint64_t model_cache_max_bytes = 16ull << 30;
  // memory.release_weights_after_s: an idle model whose weights are file-backed (loaded from a
  // cache entry) releases its resident weight pages after this many seconds without a request,
  // as ModelControls::ReleaseWeights() does. 0 = never (default).
  int32_t release_weights_after_s = 0;
  // memory.release_weights_on_pressure: an idle model (no request for at least a second) whose
  // weights are file-backed releases them when the memory it lives in is under pressure (PSI,
  // cgroup events or headroom; docs/memory.md "Release under pressure"), so the kernel's reclaim
  // does not take the pages of the model that is serving first. Sampled about once a second.
  bool release_weights_on_pressure = true;
  // memory.pressure_cgroup: where pressure is read: "auto" (default) = this process's cgroup,
  // else the machine; "machine" = /proc/pressure/memory and MemAvailable; else a cgroup folder.
  std::string pressure_cgroup = "auto";
  // execution_provider: the one execution provider to run on ("cpu", "cuda", "dml", or ORT's
  // name such as "CUDAExecutionProvider"), replacing genai_config.json's provider list; "cpu"
  // runs on CPU whatever the config names. Empty (default) = the config's list.
  std::string execution_provider;
  // chat_template: the chat template that renders messages, instead of the folder's (or where
  // the folder has none): a Jinja file (as tokenizer_config.json's "chat_template"; a relative
  // path is relative to the working directory), or the template text itself (a value with
  // "{{", "{%" or "{#" in it). Parsed at load: a bad template fails ebb::LoadModel with the
  // renderer's line and column and the file's name. Empty (default) = the folder's template.
  std::string chat_template;

  // Sets one option by its full key: "session_options.<k>", "run_options.<k>",
  // "provider_options.<ep>.<k>", or one of ebb's model keys ("kv_cache.mode", ...). Typed session
  // keys are checked here. A misspelled ebb key throws ebb::Error(InvalidArgument) with a
  // "did you mean" suggestion; a key of another scope (e.g. "temperature") names its scope.
  void Set(std::string_view key, std::string_view value);

  // Field by field (tests tie each option-table default to its field's default with it).
  bool operator==(const ModelOptions&) const = default;
};

}  // namespace ebb
