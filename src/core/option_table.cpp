// The option table (ebb/options.h) and the typed parsers every setter shares.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/admin_options.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/options.h"

namespace ebb {
namespace {

constexpr unsigned kRt = static_cast<unsigned>(OptionScope::kRuntime);
constexpr unsigned kMo = static_cast<unsigned>(OptionScope::kModel);
constexpr unsigned kSe = static_cast<unsigned>(OptionScope::kSession);
constexpr unsigned kRq = static_cast<unsigned>(OptionScope::kRequest);
constexpr unsigned kRo = static_cast<unsigned>(OptionScope::kRunOption);

using T = OptionType;

// One row per key. Keep docs/options.md's generated tables in step: `ebb options --markdown`
// prints them, and a test compares.
constexpr std::array kTable = {
    // ---- runtime (process-wide) ----
    OptionSpec{"memory.limit", T::kSize, kRt | kMo, "bytes", "0", "",
               "weights + KV of all the runtime's models together (ebb serve: idle models are "
               "evicted to fit); 0 = no limit. As a model option it sets the runtime's limit"},
    OptionSpec{"arena.max_mem", T::kSize, kRt | kSe, "bytes", "ORT's (none)", "",
               "hard cap on the process-wide CPU arena; a step that needs more fails with "
               "resource_exhausted"},
    OptionSpec{"arena_extend_strategy", T::kEnum, kRt | kSe, "", "kNextPowerOfTwo",
               "kNextPowerOfTwo|kSameAsRequested", "how the process-wide CPU arena grows",
               "0=kNextPowerOfTwo|1=kSameAsRequested"},
    OptionSpec{"arena.initial_chunk_size_bytes", T::kSize, kRt | kSe, "bytes", "ORT's", "",
               "first region of the process-wide CPU arena"},
    OptionSpec{"arena.max_dead_bytes_per_chunk", T::kSize, kRt | kSe, "bytes", "ORT's", "",
               "split threshold of the process-wide CPU arena"},
    OptionSpec{"arena.initial_growth_chunk_size_bytes", T::kSize, kRt | kSe, "bytes", "ORT's", "",
               "first extension of the process-wide CPU arena"},
    OptionSpec{"arena.max_power_of_two_extend_bytes", T::kSize, kRt | kSe, "bytes", "ORT's", "",
               "cap on one power-of-two extension of the process-wide CPU arena"},
    // ---- model load (ebb's keys) ----
    OptionSpec{"kv_cache.mode", T::kEnum, kMo | kRq, "", "static", "static|dynamic",
               "KV layout: static reserves max_length at creation; dynamic grows in chunks"},
    OptionSpec{"kv_cache.max_bytes", T::kSize, kMo, "bytes", "0", "",
               "per-model KV budget; a generator that would exceed it gets resource_exhausted; "
               "0 = none"},
    OptionSpec{"kv_cache.retain_bytes", T::kSize, kMo, "bytes", "0", "",
               "freed KV memory kept mapped for reuse; beyond it freed KV is unmapped at once"},
    OptionSpec{"kv_cache.chunk_tokens", T::kInt, kMo, "tokens", "256", "1 to 1048576",
               "dynamic mode: growth step"},
    OptionSpec{"prefill_chunk_size", T::kInt, kMo | kRq, "tokens", "256", "0 to 2147483647",
               "feed long prompts in chunks of this many tokens; 0 = the whole prompt in one Run"},
    OptionSpec{"prefix_cache.max_bytes", T::kSize, kMo | kRo, "bytes", "0", "",
               "keep the KV of request prefixes (in blocks of 16 tokens) up to this many bytes, "
               "inside kv_cache.max_bytes and memory.limit; a request that starts with the same "
               "tokens prefills only the rest; 0 = off. Also a Tier 2 run option"},
    OptionSpec{"constraint_cache.max_bytes", T::kSize, kMo, "bytes", "64MiB", "",
               "compiled output constraints (json_schema, regex, grammar) and their token masks "
               "kept for reuse by later requests with the same text; least recently used out; "
               "0 = compile for every request"},
    OptionSpec{"memory.shrink_every", T::kInt, kMo, "requests", "0", "0 to 4294967295",
               "shrink the CPU arena, KV pool and heap after every N-th request; 0 = off"},
    OptionSpec{"memory.shrink_above", T::kSize, kMo, "bytes", "0", "",
               "shrink after any request that ends with process RSS above this; 0 = off"},
    OptionSpec{"execution_provider", T::kString, kMo, "", "the config's list",
               "cpu, webgpu, cuda, dml, ... or ORT's name",
               "run on this one execution provider instead of the config's list; cpu runs a "
               "GPU model's folder on CPU; webgpu runs on any GPU through Vulkan, the KV on the "
               "device"},
    OptionSpec{"chat_template", T::kString, kMo, "", "the folder's", "a .jinja file or the text",
               "the chat template that renders messages, instead of the folder's (or where it has "
               "none): a Jinja file as tokenizer_config.json's chat_template, or the template "
               "text itself; parsed at load. Over HTTP a request sends the text (a path is the "
               "admin's)"},
    OptionSpec{"memory.release_file_pages", T::kBool, kMo, "", "true", "",
               "after load, let the kernel reclaim the model files' resident pages"},
    OptionSpec{"prefill_logits", T::kEnum, kMo, "", "last", "last|all",
               "last: a prefill Run computes the LM head only at the sampled position (the "
               "graph is rewritten at load; kept as it is, logged, when its LM head is not a "
               "MatMul); all: the graph as it is"},
    OptionSpec{"cpu_ops", T::kEnum, kMo, "", "auto", "off|auto|attention|matmul",
               "ebb's own CPU kernels (docs/cpu_ops.md): at load, a decoder's eligible "
               "GroupQueryAttention and int4 MatMulNBits (accuracy_level 4; both AVX2 or AVX-512) "
               "nodes move to them; auto = each kind this CPU runs, off = ORT's kernels. The "
               "matmul's repacked weights are file pages of the model cache entry (anonymous on "
               "a load without one); the kernels line names what moved"},
    OptionSpec{"model_cache.dir", T::kString, kMo, "", "auto", "auto, off or a folder",
               "cache of ORT's optimised graph and prepacked weights, built by the first load "
               "(the graph before it, the prepacked weights in the background after it, never "
               "a second copy of the weights) and memory-mapped (file-backed, shareable) by "
               "later loads; auto = $EBB_MODEL_CACHE_DIR if set, else $XDG_CACHE_HOME/ebb/models"},
    OptionSpec{"model_cache.max_bytes", T::kSize, kMo, "bytes", "16GiB", "",
               "disk budget of the cache folder: least recently used entries are removed "
               "beyond it; 0 = no budget"},
    OptionSpec{"memory.release_weights_after_s", T::kInt, kMo, "seconds", "0", "0 to 31536000",
               "an idle model with file-backed weights drops its resident weight pages after "
               "this long without a request (as runtime.release_weights); 0 = never"},
    OptionSpec{"memory.release_weights_on_pressure", T::kBool, kMo, "", "true", "",
               "an idle model with file-backed weights drops its resident weight pages when "
               "memory is under pressure (PSI some avg10 >= 10%, cgroup memory.events high/max, "
               "or under 5% headroom), before the kernel's reclaim takes the busy model's"},
    OptionSpec{"memory.pressure_cgroup", T::kString, kMo, "", "auto",
               "auto, machine or a cgroup folder",
               "where memory pressure is read: auto = this process's cgroup (v2, else v1), else "
               "the machine; machine = /proc/pressure/memory and MemAvailable"},
    OptionSpec{"decode_batch.max_rows", T::kInt, kMo, "rows", "1", "1 to 64",
               "decode up to this many concurrent generators of the model in one Run() per "
               "step (GQA graphs with a shared KV buffer, batch_size 1); 1 = off (ebb serve: "
               "--parallel)"},
    OptionSpec{"decode_batch.policy", T::kEnum, kMo, "", "gather", "gather|no-wait",
               "when a batched step starts: gather = once every decoding member is waiting or "
               "after decode_batch.max_wait_us; no-wait = at once, with whoever is waiting"},
    OptionSpec{"decode_batch.max_wait_us", T::kInt, kMo, "microseconds", "2000", "0 to 1000000",
               "gather policy: the longest a step waits for members still sampling their last "
               "token (a member that missed a step is not waited for again until it returns)"},
    OptionSpec{"decode_batch.prefill_chunk", T::kInt, kMo, "tokens", "32", "0 to 2147483647",
               "while the batched decode has other members, a member's prompt runs in chunks of "
               "at most this many tokens and the batched steps run between them, so a new "
               "request delays the others' next token by one chunk, not its whole prompt; 0 = "
               "prefill_chunk_size"},
    // ---- ORT session options with typed setters ----
    OptionSpec{"custom_ops_library", T::kString, kSe, "", "none", "a shared library path",
               "an ONNX Runtime custom-op library (exports RegisterCustomOps) registered in the "
               "model's sessions before its graph loads, for graphs with ops ORT lacks; "
               "genai_config.json's session_options.custom_ops_library, relative to the model "
               "folder"},
    OptionSpec{"profile_file_prefix", T::kString, kSe, "", "off", "a file path prefix",
               "write ORT's per-operator profile (Chrome trace JSON) to PREFIX_<date>.json when "
               "the model unloads; summarise with tools/ort_profile.py"},
    OptionSpec{"intra_op_num_threads", T::kInt, kSe, "threads", "physical cores", "0 to 4 x cores",
               "threads of one operator; default: the physical cores this process may use "
               "(CPU affinity, cgroup cpu.max); 0 = ORT's own default (cpuinfo's core count, "
               "which was 1 thread on a 2-vCPU VM)"},
    OptionSpec{"inter_op_num_threads", T::kInt, kSe, "threads", "0", "0 to 4 x cores",
               "threads across operators (execution_mode=parallel); 0 = ORT's default"},
    OptionSpec{"enable_cpu_mem_arena", T::kBool, kSe, "", "1", "",
               "give the session a CPU arena (0: plain malloc/free per tensor)"},
    OptionSpec{"enable_mem_pattern", T::kBool, kSe, "", "0", "",
               "ORT's per-shape allocation plans (ebb's default is off: RSS crept with mixed "
               "prompt lengths)"},
    OptionSpec{"execution_mode", T::kEnum, kSe, "", "sequential", "sequential|parallel",
               "run operators one at a time or in parallel",
               "ORT_SEQUENTIAL=sequential|ORT_PARALLEL=parallel"},
    OptionSpec{"graph_optimization_level", T::kEnum, kSe, "", "all", "disable|basic|extended|all",
               "ORT's graph optimisations",
               "ORT_DISABLE_ALL=disable|0=disable|ORT_ENABLE_BASIC=basic|1=basic|"
               "ORT_ENABLE_EXTENDED=extended|2=extended|ORT_ENABLE_ALL=all|99=all"},
    OptionSpec{"use_env_allocators", T::kBool, kSe, "", "0", "",
               "allocate from the process-wide env arena (set up with ORT's defaults when no "
               "arena.* key is given)"},
    // ---- per request (GeneratorParams) ----
    OptionSpec{"max_length", T::kInt, kRq, "tokens", "config search.max_length, else context",
               "0 to 2147483647", "total tokens per row (prompt + generated); 0 = the default"},
    OptionSpec{"batch_size", T::kInt, kRq, "rows", "1", "1 to 65536", "rows per generator"},
    OptionSpec{"do_sample", T::kBool, kRq, "", "config search.do_sample, else false", "",
               "sample instead of greedy decoding"},
    OptionSpec{"top_k", T::kInt, kRq, "tokens", "config search.top_k, else 0", "0 to 2147483647",
               "sample among the k most likely tokens; 0 = off"},
    OptionSpec{"top_p", T::kFloat, kRq, "", "config search.top_p, else 1", "0 to 1",
               "nucleus sampling; 1 = off"},
    OptionSpec{"temperature", T::kFloat, kRq, "", "config search.temperature, else 1", "0 to 100",
               "sampling temperature; 0 = greedy"},
    OptionSpec{"repetition_penalty", T::kFloat, kRq, "", "config search.repetition_penalty, else 1",
               "0.01 to 100", "HF repetition penalty; 1 = off"},
    OptionSpec{"presence_penalty", T::kFloat, kRq, "", "0", "-2 to 2",
               "OpenAI presence penalty: subtracted from the logit of every token the request "
               "already generated (greedy too); 0 = off"},
    OptionSpec{"frequency_penalty", T::kFloat, kRq, "", "0", "-2 to 2",
               "OpenAI frequency penalty: subtracted from a token's logit once per time the "
               "request already generated it (greedy too); 0 = off"},
    OptionSpec{"logit_bias", T::kString, kRq, "", "(none)",
               "ID=BIAS,... or a JSON object {\"ID\": BIAS}; bias -100 to 100",
               "added to those tokens' logits before sampling (greedy too): -100 bans a token, "
               "100 forces it; ids below the model's vocab_size"},
    OptionSpec{"logprobs", T::kBool, kRq, "", "false", "",
               "report each generated token's log-probability (log-softmax after the penalties "
               "and logit_bias, before temperature, top_k and top_p)"},
    OptionSpec{"top_logprobs", T::kInt, kRq, "tokens", "0", "0 to 20",
               "with logprobs: also the N most likely tokens at each step; > 0 turns logprobs "
               "on"},
    OptionSpec{"seed", T::kInt, kRq, "", "0", "0 to 9223372036854775807",
               "RNG seed for sampling: same seed, same tokens"},
    OptionSpec{"cache_prompt", T::kBool, kRq, "", "true", "",
               "reuse and store this request's prefix in the model's prefix cache (when "
               "prefix_cache.max_bytes > 0); false = prefill every token, store nothing"},
    OptionSpec{"json_schema", T::kString, kRq, "", "(none)", "a JSON Schema's text",
               "constrain the output to JSON that the schema accepts (draft 7 subset; an "
               "unsupported keyword is refused, naming it); {\"type\":\"object\"} = any object"},
    OptionSpec{"regex", T::kString, kRq, "", "(none)", "a regular expression",
               "constrain the output to text the whole of which the expression matches"},
    OptionSpec{"grammar", T::kString, kRq, "", "(none)", "GBNF text with a root rule",
               "constrain the output to the grammar's language (llama.cpp's GBNF)"},
    OptionSpec{"constraint_prefix", T::kString, kRq, "", "(none)", "text",
               "with json_schema, regex or grammar: literal text the constrained output starts "
               "with (e.g. a tool-call marker)"},
    OptionSpec{"constraint_suffix", T::kString, kRq, "", "(none)", "text",
               "with json_schema, regex or grammar: literal text the constrained output ends "
               "with"},
    OptionSpec{"constraint_trigger", T::kString, kRq, "", "(none)", "a non-empty string",
               "with json_schema, regex or grammar: free text until the output contains this "
               "string; from its first byte the output must match constraint_prefix + the "
               "constraint + constraint_suffix (so one of them starts with it), then it waits "
               "for the trigger again"},
    // ---- per request, the generation loop's own (GenerateRequest::Set) ----
    OptionSpec{"max_new_tokens", T::kInt, kRq, "tokens", "0", "0 to 2147483647",
               "generated tokens per row at most; 0 = until max_length (HTTP: max_tokens); "
               "without a max_length it also sizes the KV: prompt + max_new_tokens"},
    OptionSpec{"stop", T::kString, kRq, "", "(none)", "a non-empty string",
               "end a row when its text contains this string (it and what follows are not "
               "returned); each setting adds one (HTTP: stop)"},
    OptionSpec{"add_generation_prompt", T::kBool, kRq, "", "true", "",
               "with chat messages: end the rendered template with the assistant turn's opening"},
    // ---- per embedding request (EmbedRequest, ebb/embedding.h) ----
    OptionSpec{"embed.pooling", T::kEnum, kRq, "", "auto",
               "auto|mean|cls|last|model|max|mean_sqrt_len|weightedmean",
               "how token vectors become one: auto = 1_Pooling/config.json, else the graph's "
               "sentence_embedding, else mean"},
    OptionSpec{"embed.normalize", T::kBool, kRq, "",
               "false if modules.json lists no Normalize module, else true", "",
               "L2-normalise each embedding"},
    OptionSpec{"embed.truncate", T::kEnum, kRq, "", "end", "end|start|error",
               "an input over the model's maximum length: drop its end, its start, or refuse it"},
    OptionSpec{"embed.dimensions", T::kInt, kRq, "", "0", "0 to 2147483647",
               "keep the first N values (Matryoshka), then normalise; 0 = all"},
    OptionSpec{"embed.batch_size", T::kInt, kRq, "rows", "32", "1 to 65536",
               "inputs per encoder Run(); inputs are grouped by length"},
    OptionSpec{"embed.max_batch_tokens", T::kInt, kRq, "tokens", "8192", "1 to 9223372036854775807",
               "rows x longest row per encoder Run(); a longer single input runs alone"},
    OptionSpec{"embed.max_padding", T::kFloat, kRq, "", "1.25", "0, or 1 to 1000",
               "padded tokens per encoder Run() at most this x its real tokens (Runs of up to "
               "128 tokens exempt); 0 = no limit"},
    // ---- ORT run options ebb knows (others pass through) ----
    OptionSpec{"memory.enable_memory_arena_shrinkage", T::kString, kRo, "", "(unset)",
               "cpu:0, gpu:0, cpu:0;gpu:0, webgpu:0 or empty",
               "ORT's key: shrink the named arenas at the end of EVERY Run() (every token); on a "
               "WebGPU model webgpu:0 (or gpu:0) keeps nothing on the device past a Run(); empty "
               "= off"},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "0 to 1" -> {0, 1}; false when `values` is not a range.
bool ParseRange(std::string_view values, double* lo, double* hi) {
  const auto sep = values.find(" to ");
  if (sep == std::string_view::npos) return false;
  const std::string a(values.substr(0, sep)), b(values.substr(sep + 4));
  char* e1 = nullptr;
  char* e2 = nullptr;
  *lo = std::strtod(a.c_str(), &e1);
  *hi = std::strtod(b.c_str(), &e2);
  return *e1 == '\0' && *e2 == '\0';
}

// The keys only the admin may set (core/admin_options.h): process-wide state, files and folders,
// code to load, thread counts and arena sizes. Keep docs/http_api.md#security-model in step.
constexpr std::array<std::string_view, 16> kAdminOnly = {
    "memory.limit",
    "arena.max_mem",
    "arena_extend_strategy",
    "arena.initial_chunk_size_bytes",
    "arena.max_dead_bytes_per_chunk",
    "arena.initial_growth_chunk_size_bytes",
    "arena.max_power_of_two_extend_bytes",
    "execution_provider",
    "model_cache.dir",
    "model_cache.max_bytes",
    "memory.pressure_cgroup",
    "profile_file_prefix",
    "custom_ops_library",
    "intra_op_num_threads",
    "inter_op_num_threads",
    "use_env_allocators",
};

}  // namespace

std::span<const OptionSpec> OptionTable() { return kTable; }

const OptionSpec* FindOption(std::string_view key) {
  for (const auto& s : kTable) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

std::string_view OptionScopeName(OptionScope scope) {
  switch (scope) {
    case OptionScope::kRuntime:
      return "runtime";
    case OptionScope::kModel:
      return "model";
    case OptionScope::kSession:
      return "session";
    case OptionScope::kRequest:
      return "request";
    case OptionScope::kRunOption:
      return "run";
  }
  return "?";
}

std::string_view OptionTypeName(OptionType type) {
  switch (type) {
    case OptionType::kBool:
      return "bool";
    case OptionType::kInt:
      return "int";
    case OptionType::kFloat:
      return "float";
    case OptionType::kSize:
      return "size";
    case OptionType::kEnum:
      return "enum";
    case OptionType::kString:
      return "string";
  }
  return "?";
}

namespace internal {

bool ParseBool(std::string_view key, std::string_view value) {
  const std::string v = Lower(value);
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw Error(ErrorCode::InvalidArgument, std::string(key) + "='" + std::string(value) +
                                              "' is not a boolean; use true, false, 1 or 0");
}

int64_t ParseInt(std::string_view key, std::string_view value, int64_t min, int64_t max) {
  int64_t x = 0;
  const std::string v = Trim(value);
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || x < min || x > max) {
    throw Error(ErrorCode::InvalidArgument, std::string(key) + "='" + std::string(value) +
                                                "' is not an integer from " + std::to_string(min) +
                                                " to " + std::to_string(max));
  }
  return x;
}

double ParseFloat(std::string_view key, std::string_view value, double min, double max) {
  const std::string v = Trim(value);
  char* end = nullptr;
  const double x = v.empty() ? 0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < min || x > max) {
    throw Error(ErrorCode::InvalidArgument, std::string(key) + "='" + std::string(value) +
                                                "' is not a finite number from " +
                                                FormatNumber(min) + " to " + FormatNumber(max));
  }
  return x;
}

void CheckOptionRange(std::string_view key, double value, std::string_view hint) {
  const OptionSpec* spec = FindOption(key);
  double lo = 0, hi = 0;
  if (spec == nullptr || !ParseRange(spec->values, &lo, &hi)) {
    throw Error(ErrorCode::Internal, "CheckOptionRange: no ranged option " + std::string(key));
  }
  // Typed fields are often float: 0.01f is 0.0099999998 as a double. A bound is met within one
  // part in a million of itself (float's own precision is about 6e-8).
  const double slack_lo = std::fabs(lo) * 1e-6, slack_hi = std::fabs(hi) * 1e-6;
  // Written as !(in range) so that NaN, which compares false with everything, is refused.
  if (!std::isfinite(value) || !(value >= lo - slack_lo && value <= hi + slack_hi)) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(key) + "=" + FormatNumber(value) + " is out of range: need " +
                    std::string(spec->values) +
                    (hint.empty() ? "" : " (" + std::string(hint) + ")"));
  }
}

void ValidateOptionValue(const OptionSpec& spec, std::string_view value) {
  double lo = 0, hi = 0;
  const bool ranged = ParseRange(spec.values, &lo, &hi);
  switch (spec.type) {
    case OptionType::kBool:
      ParseBool(spec.key, value);
      break;
    case OptionType::kInt: {
      // Integer bounds are read as integers: a double cannot hold 2^63 - 1.
      int64_t ilo = INT64_MIN, ihi = INT64_MAX;
      if (ranged) {
        const auto sep = spec.values.find(" to ");
        ilo = std::strtoll(std::string(spec.values.substr(0, sep)).c_str(), nullptr, 10);
        ihi = std::strtoll(std::string(spec.values.substr(sep + 4)).c_str(), nullptr, 10);
      }
      ParseInt(spec.key, value, ilo, ihi);
      break;
    }
    case OptionType::kFloat:
      ParseFloat(spec.key, value, ranged ? lo : -1e300, ranged ? hi : 1e300);
      break;
    case OptionType::kSize:
      ParseByteSize(value, spec.key);
      break;
    case OptionType::kEnum:
      CanonicalEnumValue(spec, value);
      break;
    case OptionType::kString:
      break;
  }
}

std::string CanonicalEnumValue(const OptionSpec& spec, std::string_view value) {
  for (const auto& choice : Split(spec.values, '|')) {
    if (choice == value) return choice;
  }
  std::string aliases;
  for (const auto& alias :
       spec.aliases.empty() ? std::vector<std::string>{} : Split(spec.aliases, '|')) {
    const auto eq = alias.find('=');
    if (eq != std::string::npos && alias.substr(0, eq) == value) return alias.substr(eq + 1);
    // Two appends, not " " + substr: GCC 12's -O2 -Wrestrict misreads that operator+ (a false
    // positive, GCC bug 105329).
    aliases += ' ';
    aliases.append(alias, 0, eq);
  }
  std::string choices(spec.values);
  std::replace(choices.begin(), choices.end(), '|', ' ');
  throw Error(ErrorCode::InvalidArgument,
              std::string(spec.key) + "='" + std::string(value) + "' is not one of: " + choices +
                  (aliases.empty() ? "" : " (or ONNX Runtime's" + aliases + ")"));
}

void ThrowUnknownKey(std::string_view key, OptionScope scope, std::string_view extra_hint) {
  std::vector<std::string_view> candidates;
  for (const auto& s : kTable) candidates.push_back(s.key);
  std::string hint = DidYouMean(key, candidates);
  std::string keys;
  for (const auto& s : kTable) {
    if (HasScope(s, scope)) keys += (keys.empty() ? "" : ", ") + std::string(s.key);
  }
  throw Error(ErrorCode::InvalidArgument,
              "unknown " + std::string(OptionScopeName(scope)) + " option '" +
                  EscapeForMessage(key, 200) + "'" + hint + "; the " +
                  std::string(OptionScopeName(scope)) + " keys are " + keys +
                  (extra_hint.empty() ? "" : "; ") + std::string(extra_hint) +
                  " (docs/options.md, `ebb options`)");
}

void ThrowWrongScope(const OptionSpec& spec, OptionScope scope) {
  std::string where;
  for (unsigned bit = 1; bit <= 16; bit <<= 1) {
    if (spec.scopes & bit) {
      where += (where.empty() ? "" : " or ") +
               std::string(OptionScopeName(static_cast<OptionScope>(bit)));
    }
  }
  throw Error(ErrorCode::InvalidArgument,
              "option '" + std::string(spec.key) + "' is a " + where + " option, not a " +
                  std::string(OptionScopeName(scope)) + " option; set it " +
                  (HasScope(spec, OptionScope::kRequest) && spec.key.starts_with("embed.")
                       ? "per embedding request (EmbedRequest::Set, ebb embed --option)"
                   : HasScope(spec, OptionScope::kRequest)
                       ? "per request (GenerateRequest::Set, request options)"
                   : HasScope(spec, OptionScope::kSession)
                       ? "as a session option (session_options." + std::string(spec.key) +
                             ", --session-option)"
                   : HasScope(spec, OptionScope::kRuntime) ? "on the runtime (RuntimeOptions::Set)"
                   : HasScope(spec, OptionScope::kRunOption)
                       ? "as a run option (run_options." + std::string(spec.key) + ", SetRunOption)"
                       : "at model load (ModelOptions::Set, --option)"));
}

}  // namespace internal
}  // namespace ebb

namespace ebb::internal {

bool IsAdminOnlyOption(std::string_view key) {
  for (std::string_view k : kAdminOnly) {
    if (k == key) return true;
  }
  return false;
}

bool IsAdminOnlyValue(std::string_view key, std::string_view value) {
  // chat_template names a file the service would read, unless it is the template text itself.
  if (key == "chat_template") return !IsChatTemplateText(value);
  return IsAdminOnlyOption(key);
}

bool IsChatTemplateText(std::string_view value) {
  // Every Jinja template that renders messages has a tag; no sane file name has one.
  return value.find("{{") != std::string_view::npos || value.find("{%") != std::string_view::npos ||
         value.find("{#") != std::string_view::npos;
}

void CheckRunOptionEntry(const std::string& key, const std::string& value) {
  // ORT's config entries: key 1 to 1024 bytes, value up to 4096 (ConfigOptions::AddConfigEntry).
  constexpr size_t kMaxKey = 1024, kMaxValue = 4096;
  if (key.empty() || key.size() > kMaxKey) {
    throw Error(
        ErrorCode::InvalidArgument,
        "run option key " +
            (key.empty() ? std::string("''") : "of " + std::to_string(key.size()) + " bytes") +
            ": a key is 1 to " + std::to_string(kMaxKey) +
            " bytes (ONNX Runtime's limit); nothing was set");
  }
  if (!IsValidUtf8(key)) {
    throw Error(ErrorCode::InvalidArgument, "run option key '" + EscapeForMessage(key, 200) +
                                                "' is not valid UTF-8 (run option keys and values "
                                                "must be); nothing was set");
  }
  if (value.size() > kMaxValue) {
    throw Error(ErrorCode::InvalidArgument, "run option " + key + ": the value has " +
                                                std::to_string(value.size()) +
                                                " bytes; ONNX Runtime takes at most " +
                                                std::to_string(kMaxValue) + "; nothing was set");
  }
  if (!IsValidUtf8(value)) {
    throw Error(ErrorCode::InvalidArgument,
                "run option " + key + "='" + EscapeForMessage(value, 200) +
                    "': the value is not valid UTF-8 (run option keys and values must be); "
                    "nothing was set");
  }
}

}  // namespace ebb::internal
