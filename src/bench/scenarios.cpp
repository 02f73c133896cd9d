#include "bench/scenarios.h"

#include <chrono>
#include <optional>
#include <string_view>

#include "bench/embed_workload.h"
#include "bench/naive_embed_loop.h"
#include "bench/naive_ort_loop.h"
#include "core/strings.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"

namespace ebb::bench {
namespace {

enum class Mode { kSeedLoop, kReuse, kRag, kRagPrefix, kLoadUnload, kRecycle };

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class EbbWorkload final : public Workload {
 public:
  EbbWorkload(Mode mode, int32_t recycle_every, std::string name, const BenchOptions& options,
              const PromptSet& prompts)
      : mode_(mode),
        recycle_every_(recycle_every),
        name_(std::move(name)),
        options_(options),
        prompts_(prompts) {}

  std::string name() const override { return name_; }
  std::string engine() const override { return "ebb"; }
  std::string scenario() const override {
    switch (mode_) {
      case Mode::kSeedLoop:
        return "seed-loop";
      case Mode::kReuse:
        return "reuse";
      case Mode::kRag:
        return "rag";
      case Mode::kRagPrefix:
        return "rag-prefix";
      case Mode::kLoadUnload:
        return "load-unload";
      case Mode::kRecycle:
        return "recycle:" + std::to_string(recycle_every_);
    }
    return "";
  }

  double Setup() override {
    if (mode_ == Mode::kLoadUnload) return 0;
    const auto t = std::chrono::steady_clock::now();
    model_ = ebb::LoadModel(options_.model_dir, options_.model_options);
    const double seconds = SecondsSince(t);
    first_model_alive_ = true;
    RememberDevice();
    return seconds;
  }

  RequestTiming RunIteration(int32_t index) override {
    std::optional<double> load_s;
    if (!model_) {  // load-unload every iteration; recycle:K after an unload
      const auto t = std::chrono::steady_clock::now();
      model_ = ebb::LoadModel(options_.model_dir, options_.model_options);
      load_s = SecondsSince(t);
      if (!first_load_ && !first_model_alive_) first_model_alive_ = true;
      if (!device_checked_) RememberDevice();
    }
    const PromptKind kind = mode_ == Mode::kRag         ? PromptKind::kRag
                            : mode_ == Mode::kRagPrefix ? PromptKind::kRagPrefix
                                                        : PromptKind::kFixed;
    const auto rows = prompts_.Rows(index, options_.batch, kind);
    const int32_t prompt_len = static_cast<int32_t>(rows[0].size());
    GeneratorParams gp;
    gp.batch_size = options_.batch;
    gp.kv_mode = options_.kv_mode;
    gp.max_length = prompt_len + options_.gen_tokens;
    if (options_.constrained) gp.Set(options_.constraint_key, options_.constraint_text);

    TokenClock clock;
    uint64_t cached = 0;  // prompt tokens the prefix cache gave this request
    double constraint_ms = 0;
    int64_t forced = 0;
    if (mode_ == Mode::kReuse) {
      if (!reused_) {
        reused_ = std::make_unique<Generator>(model_, gp);
        clock.Start();
      } else {
        clock.Start();
        reused_->RewindTo(0);
      }
      const GeneratorStats before = reused_->Stats();  // counted over the generator's life
      Generate(*reused_, rows, clock);
      AtLastToken();
      const GeneratorStats now = reused_->Stats();
      cached = now.cached_tokens - before.cached_tokens;
      constraint_ms = now.constraint_ms - before.constraint_ms;
      forced = static_cast<int64_t>(now.forced_tokens - before.forced_tokens);
    } else {
      clock.Start();
      Generator gen(model_, gp);
      Generate(gen, rows, clock);
      AtLastToken();
      cached = gen.Stats().cached_tokens;
      constraint_ms = gen.Stats().constraint_ms;
      forced = static_cast<int64_t>(gen.Stats().forced_tokens);
    }  // the generator is destroyed here (storing its sequence), before the "after" sample

    RequestTiming timing = clock.Finish(prompt_len);
    timing.load_s = load_s;
    timing.cached_tokens = static_cast<int64_t>(cached);
    timing.constraint_ms = constraint_ms;
    timing.forced_tokens = forced;
    if (mode_ == Mode::kLoadUnload ||
        (mode_ == Mode::kRecycle && (index + 1) % recycle_every_ == 0)) {
      Retire();
    }
    return timing;
  }

  KvSample Kv() const override { return SamplePools().kv; }

  // ORT's CPU arena of this model's session, through ebb's MemoryStats.
  ArenaSample Arena() const override { return SamplePools().arena; }

  // One MemoryStats read: the KV pool, the prefix cache's bytes (part of the pool's in use),
  // ORT's CPU arena of this model's session and, for a model on an accelerator, the device's
  // figures (its KV pool is then the device's: MemoryStats::kv is 0).
  Pools SamplePools() const override {
    if (!model_) return {{0, 0, 0}, {}, {}};  // unloaded: its pool, cache and arena are gone
    const MemoryStats s = model_->runtime().Stats();
    Pools p{{s.kv.in_use_bytes, s.kv.reserved_bytes, s.prefix_cache.bytes},
            ToArenaSample(s.cpu_arena),
            {}};
    if (s.device.available) {
      const DeviceMemory& d = s.device;
      p.device.kv_in_use_bytes = d.kv.in_use_bytes;
      p.device.kv_reserved_bytes = d.kv.reserved_bytes;
      p.device.used_bytes = d.used_bytes;
      if (d.driver_process_bytes >= 0) {
        p.device.driver_process_bytes = static_cast<uint64_t>(d.driver_process_bytes);
      }
    }
    return p;
  }

  std::optional<DeviceInfo> Device() const override { return device_; }

  // The first load's figures: from the model while it is the first one (a background cache
  // build's peak arrives when the build ends), else as the first model left them.
  std::optional<WeightsMemory> FirstLoad() const override {
    if (model_ && first_model_alive_) return model_->runtime().Stats().weights;
    return first_load_;
  }

  // The prefix cache of the model alive now, with the counters of the models this run unloaded
  // (load-unload, recycle:K) added; after the run's last iteration, the run's totals.
  std::optional<PrefixCacheStats> PrefixCacheSample() const override {
    PrefixCacheStats s = model_ ? model_->runtime().Stats().prefix_cache : PrefixCacheStats{};
    if (!model_) s.block_tokens = retired_.block_tokens;
    AddPrefixCacheCounters(s, retired_);
    if (!model_) s.max_bytes = retired_.max_bytes;
    return s;
  }

  // ebb's own shrink: the arena (a minimal step), the KV pool's retained blocks and the heap.
  void Shrink() override {
    if (model_) {
      model_->runtime().ShrinkArena();
    } else {
      Workload::Shrink();
    }
  }

  void Teardown() override {
    reused_.reset();
    if (model_ && first_model_alive_) first_load_ = model_->runtime().Stats().weights;
    first_model_alive_ = false;
    model_.reset();
  }

 private:
  // Keeps the names of the loaded model's accelerator, if it has one (once per run: every load
  // of a run has the same options).
  void RememberDevice() {
    device_checked_ = true;
    const DeviceMemory d = model_->runtime().Stats().device;
    if (!d.available) return;
    device_ = DeviceInfo{d.device, d.adapter, d.cache_mode, d.weights_bytes, d.limit_bytes};
  }

  // Unloads the model, keeping its prefix cache's counters for PrefixCacheSample().
  void Retire() {
    if (first_model_alive_) first_load_ = model_->runtime().Stats().weights;
    first_model_alive_ = false;
    const PrefixCacheStats s = model_->runtime().Stats().prefix_cache;
    retired_.max_bytes = s.max_bytes;
    retired_.block_tokens = s.block_tokens;
    AddPrefixCacheCounters(retired_, s);
    model_.reset();
  }

  void Generate(Generator& gen, const std::vector<std::vector<int32_t>>& rows, TokenClock& clock) {
    if (rows.size() == 1) {
      gen.AppendTokens(rows[0]);
    } else {
      gen.AppendTokens(rows);
    }
    while (clock.tokens() < options_.gen_tokens && !gen.done()) {
      gen.GenerateNextToken();
      clock.Token();
      AtToken(clock.tokens());
    }
  }

  Mode mode_;
  int32_t recycle_every_;
  std::string name_;
  const BenchOptions& options_;  // not owned
  const PromptSet& prompts_;     // not owned
  std::shared_ptr<Model> model_;
  bool first_model_alive_ = false;           // model_ is the run's first load
  std::optional<WeightsMemory> first_load_;  // its figures once it is gone
  std::unique_ptr<Generator> reused_;        // reuse only
  PrefixCacheStats retired_;                 // counters of the models unloaded so far
  std::optional<DeviceInfo> device_;         // the model's accelerator (RememberDevice)
  bool device_checked_ = false;
};

constexpr std::string_view kNaiveOrt = "naive-ort";

// " (did you mean 'x'?)" for a near miss or a prefix of a candidate ("naive", "load"), else "".
std::string Suggest(const std::string& word, const std::vector<std::string_view>& candidates) {
  std::string s = internal::DidYouMean(word, candidates);
  if (!s.empty() || word.size() < 3) return s;
  for (auto c : candidates) {
    if (c.substr(0, word.size()) == word) return " (did you mean '" + std::string(c) + "'?)";
  }
  return "";
}
constexpr std::string_view kRecyclePrefix = "recycle:";

}  // namespace

const std::vector<std::string>& ScenarioNames() {
  static const std::vector<std::string> names{"seed-loop",  "reuse",       "rag",
                                              "rag-prefix", "load-unload", "embed"};
  return names;
}

void CheckScenarioName(const std::string& name) {
  std::vector<std::string_view> candidates(ScenarioNames().begin(), ScenarioNames().end());
  for (auto c : candidates) {
    if (c == name) return;
  }
  throw Error(ErrorCode::InvalidArgument,
              "unknown scenario '" + name + "'" + Suggest(name, candidates) +
                  "; --scenario takes one of: seed-loop, reuse, rag, rag-prefix, load-unload "
                  "(decoders), embed (encoders)");
}

namespace {

// A whole number written with digits only (at most 9 of them), else nullopt.
std::optional<int64_t> WholeNumber(const std::string& s) {
  bool ok = !s.empty() && s.size() < 10;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  return ok ? std::optional<int64_t>(std::stoll(s)) : std::nullopt;
}

// Checks the BASE of a run spec.
void CheckBase(const std::string& spec, const std::string& base, const std::string& flag) {
  if (base == kNaiveOrt) return;
  if (base.rfind(kRecyclePrefix, 0) == 0) {
    const auto k = WholeNumber(base.substr(kRecyclePrefix.size()));
    if (!k || *k < 1) {
      throw Error(ErrorCode::InvalidArgument,
                  flag + " '" + spec +
                      "': recycle:K needs a whole number of iterations K >= 1, e.g. recycle:5");
    }
    return;
  }
  for (const auto& s : ScenarioNames()) {
    if (s == base) return;
  }
  std::vector<std::string_view> candidates{kNaiveOrt, "recycle:5"};
  for (const auto& s : ScenarioNames()) candidates.push_back(s);
  throw Error(ErrorCode::InvalidArgument,
              flag + " '" + spec + (spec == base ? "'" : "': '" + base + "'") +
                  " is not a baseline" + Suggest(base, candidates) +
                  "; use naive-ort, recycle:K (K >= 1) or a scenario (seed-loop, reuse, rag, "
                  "rag-prefix, load-unload, embed), optionally followed by ,KEY=VALUE overrides");
}

}  // namespace

RunSpec ParseRunSpec(const std::string& spec, const std::string& flag) {
  RunSpec r;
  r.text = spec;
  const std::vector<std::string> parts = internal::Split(spec, ',');
  r.base = parts.empty() ? std::string() : parts[0];
  CheckBase(spec, r.base, flag);
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& kv = parts[i];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      throw Error(ErrorCode::InvalidArgument,
                  flag + " '" + spec + "': '" + kv + "' is not KEY=VALUE; write e.g. " + r.base +
                      ",shrink-every=10 or " + r.base + ",prefill_chunk_size=0");
    }
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "constrained") {
      if (value != "true" && value != "false") {
        throw Error(
            ErrorCode::InvalidArgument,
            flag + " '" + spec + "': constrained takes true or false (got '" + value + "')");
      }
      r.options.emplace_back(key, value);
      continue;
    }
    if (key == "shrink-every") {
      const auto n = WholeNumber(value);
      if (!n) {
        throw Error(ErrorCode::InvalidArgument,
                    flag + " '" + spec + "': shrink-every needs a whole number N >= 0 (got '" +
                        value + "')");
      }
      r.shrink_every = static_cast<int32_t>(*n);
      continue;
    }
    if (r.base == kNaiveOrt && key.rfind("session_options.", 0) != 0 &&
        key.rfind("run_options.", 0) != 0 && key != "embed.batch_size") {
      throw Error(ErrorCode::InvalidArgument,
                  flag + " '" + spec + "': naive-ort takes shrink-every, session_options.*, " +
                      "run_options.* and (with --scenario embed) embed.batch_size only ('" + key +
                      "' is an ebb option it has no use for)");
    }
    if (key.rfind("embed.", 0) == 0 && r.base != "embed" && r.base != kNaiveOrt) {
      throw Error(ErrorCode::InvalidArgument,
                  flag + " '" + spec + "': '" + key +
                      "' is an embedding request key; it applies to embed runs only (write "
                      "embed," +
                      kv + ")");
    }
    r.options.emplace_back(key, value);
  }
  return r;
}

BenchOptions RunOptions(const RunSpec& spec, const BenchOptions& base, const std::string& flag) {
  BenchOptions o = base;
  if (spec.shrink_every) o.shrink_every = *spec.shrink_every;
  for (const auto& [k, v] : spec.options) {
    if (k == "constrained") {
      o.constrained = v == "true";
      if (o.constrained && o.constraint_key.empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    flag + " '" + spec.text +
                        "': constrained=true needs the constraint: --json-schema FILE, --regex RE "
                        "or --grammar FILE");
      }
      continue;
    }
    try {
      if (k.rfind("embed.", 0) == 0) {
        EmbedRequest probe;
        probe.Set(k, v);  // throws for a bad key or value
        o.embed_options.emplace_back(k, v);
        continue;
      }
      o.model_options.Set(k, v);
    } catch (const Error& e) {
      throw Error(ErrorCode::InvalidArgument, flag + " '" + spec.text + "': " + e.what());
    }
    if (k == "kv_cache.mode") o.kv_mode = o.model_options.kv_mode;
  }
  return o;
}

void CheckRunSpec(const std::string& spec, const std::string& flag, const BenchOptions& base) {
  (void)RunOptions(ParseRunSpec(spec, flag), base, flag);
}

std::unique_ptr<Workload> MakeWorkload(const RunSpec& spec, const BenchOptions& options,
                                       const PromptSet& prompts, const EmbedDocuments* documents) {
  const std::string& text = spec.text;
  const bool embed =
      spec.base == "embed" || (spec.base == kNaiveOrt && options.scenario == "embed");
  if (embed && documents == nullptr) {
    throw Error(ErrorCode::Internal, "run '" + text + "' is an embed run but has no documents");
  }
  if (spec.base == kNaiveOrt) {
    if (embed) return std::make_unique<NaiveEmbedWorkload>(text, options, *documents);
    return std::make_unique<NaiveOrtWorkload>(text, options, prompts);
  }
  if (spec.base == "embed")
    return std::make_unique<EmbedWorkload>("ebb:" + text, options, *documents);
  if (spec.base.rfind(kRecyclePrefix, 0) == 0) {
    const int32_t k = std::stoi(spec.base.substr(kRecyclePrefix.size()));
    return std::make_unique<EbbWorkload>(Mode::kRecycle, k, text, options, prompts);
  }
  Mode mode = Mode::kSeedLoop;
  if (spec.base == "reuse") mode = Mode::kReuse;
  if (spec.base == "rag") mode = Mode::kRag;
  if (spec.base == "rag-prefix") mode = Mode::kRagPrefix;
  if (spec.base == "load-unload") mode = Mode::kLoadUnload;
  if (mode == Mode::kReuse && options.batch != 1) {
    throw Error(ErrorCode::InvalidArgument,
                "scenario 'reuse' rewinds one generator with RewindTo, which needs --batch 1 "
                "(got --batch " +
                    std::to_string(options.batch) + ")");
  }
  return std::make_unique<EbbWorkload>(mode, 0, "ebb:" + text, options, prompts);
}

}  // namespace ebb::bench
