#include "ebb/generator.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "constrain/constraint.h"
#include "core/log.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "generate/decode_batcher.h"
#include "generate/generator_params.h"
#include "generate/generator_testing.h"
#include "generate/prefix_import.h"
#include "generate/sampler.h"
#include "generate/shrink_step.h"
#include "kv/kv_cache.h"
#include "kv/kv_pool.h"
#include "kv/prefix_cache.h"
#include "memory/shrink_controller.h"
#include "model/constraint_cache.h"
#include "model/decoder_feed.h"
#include "model/model_host.h"
#include "model/model_views.h"
#include "model/step_runner.h"

namespace ebb {
namespace {

using Clock = std::chrono::steady_clock;
using internal::DecodeBatcher;
using internal::KvCache;
using internal::RunView;

// Set by RunShrinkStep around its generator: ebb's own minimal step is not a request (no policy
// fires, no observer sees it, it does not count as served).
thread_local bool t_internal_step = false;
// Set by RunPrefillStep with t_internal_step: the internal step uses the prefix cache.
thread_local bool t_internal_cache = false;

// Holds one of the model's generator slots for the generator's whole life: declared first in
// Impl, so it is released last, after the KV cache went back to the pool.
struct GeneratorSlot {
  explicit GeneratorSlot(RunView m) : model(m), id(model.AcquireSlot()) {}
  ~GeneratorSlot() { model.ReleaseSlot(id); }
  GeneratorSlot(const GeneratorSlot&) = delete;
  GeneratorSlot& operator=(const GeneratorSlot&) = delete;
  RunView model;
  uint64_t id;
};
// A row of the model's DecodeBatcher, held from before the KV cache is created until after it is
// destroyed (declared before it in Impl): leaving gives the row's pages back to the OS.
struct BatchRow {
  std::shared_ptr<DecodeBatcher> batcher;  // null: this generator runs alone
  int row = -1;
  BatchRow() = default;
  BatchRow(const BatchRow&) = delete;
  BatchRow& operator=(const BatchRow&) = delete;
  ~BatchRow() {
    if (batcher) batcher->Leave(row);
  }
};
// FailNthRunForTesting's countdown (generator_testing.h); 0 = off.
thread_local int t_fail_run_countdown = 0;

}  // namespace

// One row's structured-output constraint as the sampler's TokenFilter: the mask over the
// constraint's vocabulary (the tokenizer's), mapped onto the logits (the graph's; ids past the
// tokenizer's have no text and are never allowed).
class ConstraintFilter final : public internal::TokenFilter {
 public:
  // `ms` (borrowed) accumulates the time spent in the constraint.
  ConstraintFilter(constrain::ConstraintState& state, std::span<const int32_t> eos, double& ms)
      : state_(state), eos_(eos), ms_(ms) {}
  bool Allows(int32_t token) override {
    const auto t = Clock::now();
    const bool ok = state_.Allows(token, eos_);
    ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    return ok;
  }
  bool Mask(std::span<float> logits) override {
    const auto t = Clock::now();
    state_.FillMask(bits_, eos_);
    ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    const size_t known = bits_.size() * 64;
    bool any = false;
    for (size_t i = 0; i < logits.size(); ++i) {
      const bool ok = i < known && ((bits_[i >> 6] >> (i & 63)) & 1);
      if (!ok) {
        logits[i] = -INFINITY;
      } else if (logits[i] > -INFINITY) {
        any = true;
      }
    }
    return any;
  }

 private:
  constrain::ConstraintState& state_;
  std::span<const int32_t> eos_;
  double& ms_;
  std::vector<uint64_t> bits_;  // reused per step
};

struct Generator::Impl {
  std::shared_ptr<Model> model;
  RunView m;
  GeneratorSlot slot;  // before every member that holds model memory (the KV cache)
  int32_t batch;
  int32_t max_length;
  int32_t prefill_chunk;
  bool right_padded;  // GQA graphs: rows start at column 0, padding on the right
  BatchRow brow;      // before kv: the KV may live in the batcher's row
  std::unique_ptr<KvCache> kv;
  std::vector<internal::Sampler> samplers;  // one per row, so rows are independent
  // Structured output (GeneratorParams::json_schema/regex/grammar): one state per row, empty
  // when the request has no constraint. `forced` queues the tokens a row's constraint allows
  // alone (batch 1): GenerateNextToken hands them out one per call without a model step, and
  // the next Run feeds them all at once.
  std::vector<std::unique_ptr<constrain::ConstraintState>> constraints;
  std::vector<int32_t> forced;

  std::vector<std::vector<int32_t>> sequences;  // real tokens per row (no padding)
  std::vector<int32_t> lens;                    // tokens of each row held in the KV cache
  std::vector<std::vector<uint8_t>> mask;       // left-padded graphs: mask history per row
  int32_t width = 0;                            // KV columns (max row length incl. padding)
  std::vector<std::vector<int32_t>> pending;    // appended, not yet run, per row
  std::vector<bool> done;
  std::vector<int32_t> next_tokens;
  bool want_logprobs = false;
  bool cache_prompt = true;  // GeneratorParams::cache_prompt (and the model has a prefix cache)
  std::vector<TokenLogprobs> next_logprobs;  // per row, when want_logprobs
  std::vector<float> row_logits;             // one row's logits for the sampler, reused
  std::vector<float> logits;                 // [batch, vocab], last position, float32
  bool logits_valid = false;
  internal::DecoderFeed step_feed{m.model()};  // a step's inputs and ORT's logits buffer, reused
  GeneratorStats stats;
  bool started = false;
  Clock::time_point t_first_append{};
  Clock::time_point t_first_token{};
  bool have_first_token = false;
  bool request_open = false;      // a generation has run and not yet ended
  bool internal_request = false;  // ebb's own minimal shrink step: not a request
  bool failed = false;            // the last step threw (the request ends as an error)
  uint64_t request_id = 0;
  Clock::time_point t_request_start{};

  // Opens a request at its first Run(): observers see it start.
  void BeginRequest() {
    if (request_open) return;
    request_open = true;
    failed = false;
    t_request_start = Clock::now();
    if (internal_request) return;
    request_id = internal::NextRequestId();
    m.host().NotifyRequestStart({m.id(), request_id});
  }

  // Ends the current request (a generation): observers see it end, then the model's shrink
  // policies run.
  void EndRequest() {
    if (!request_open) return;
    request_open = false;
    if (internal_request) return;
    // The whole sequence's KV (prompt and answer) for the next turn of a chat; a failed step
    // stores nothing more (its prompt was stored after the prefill).
    if (!failed && batch == 1) StorePrefixes();
    RequestEnd e;
    e.model_id = m.id();
    e.request_id = request_id;
    e.outcome = failed      ? RequestOutcome::kError
                : AllDone() ? RequestOutcome::kCompleted
                            : RequestOutcome::kCancelled;
    e.prompt_tokens = stats.prompt_tokens;
    e.generated_tokens = stats.generated_tokens;
    e.ttft_ms = have_first_token ? stats.ttft_ms : -1;
    e.duration_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count();
    m.Touch();
    m.host().NotifyRequestEnd(e);
    m.shrink().EndRequest();
  }

  template <typename F>
  void Call(F&& fn);

  Impl(std::shared_ptr<Model> mdl, const GeneratorParams& p)
      : model(std::move(mdl)), m(*model), slot(m) {
    internal_request = t_internal_step;
    const ModelInfo& info = m.info();
    if (info.is_encoder) {
      throw Error(ErrorCode::FailedPrecondition,
                  "model '" + m.id() + "' (" + info.type +
                      ") is an encoder (embedding) model: it has no logits and cannot generate; "
                      "use ebb::Embed (ebb/embedding.h) or `ebb embed`");
    }
    // Precedence and ranges: generate/generator_params.h (the checks Set() makes).
    const internal::ResolvedSampling rs = internal::ResolveSampling(p, m.config().search);
    const bool do_sample = rs.do_sample;
    const int32_t top_k = rs.top_k;
    const float top_p = rs.top_p;
    const float temperature = rs.temperature;
    const float repetition_penalty = rs.repetition_penalty;
    for (const auto& [id, bias] : p.logit_bias) {
      if (id < 0 || id >= info.vocab_size) {
        throw Error(ErrorCode::InvalidArgument,
                    "logit_bias: token id " + std::to_string(id) +
                        " is outside the vocabulary of model '" + m.id() + "' (vocab_size " +
                        std::to_string(info.vocab_size) + ": ids 0 to " +
                        std::to_string(info.vocab_size - 1) + ")");
      }
    }
    MakeConstraints(p);
    want_logprobs = p.logprobs || p.top_logprobs > 0;
    cache_prompt =
        p.cache_prompt && m.prefix_cache() != nullptr && (!internal_request || t_internal_cache);
    batch = p.batch_size;
    int32_t want = p.max_length > 0
                       ? p.max_length
                       : (m.config().search.max_length > 0 ? m.config().search.max_length
                                                           : info.context_length);
    if (want > info.context_length) {
      EBB_LOG_WARN("max_length {} exceeds the model's context_length {}; clamped to {}", want,
                   info.context_length, info.context_length);
      want = info.context_length;
    }
    max_length = want;
    prefill_chunk = p.prefill_chunk_size.value_or(m.options().prefill_chunk_size);
    if (prefill_chunk < 0) {
      throw Error(ErrorCode::InvalidArgument, "prefill_chunk_size must be >= 0 (0 = no chunking)");
    }
    // Padding follows the attention op: GQA reads each row's length from the attention mask
    // (seqlens_k) and expects the row's tokens at columns [0, length), so GQA graphs are always
    // right-padded; other graphs are left-padded like GPT-2.
    right_padded = info.uses_gqa;

    internal::KvShape shape = m.kv_shape();
    shape.batch = batch;
    const KvMode mode = p.kv_mode.value_or(m.options().kv_mode);
    // GQA graphs with search.past_present_share_buffer share past and present in both modes
    // (dynamic grows the shared buffer); other graphs ping-pong.
    // decode_batch.max_rows > 1: a batch-1 generator of a GQA graph with a shared buffer decodes
    // in the model's batched steps when a row is free (its KV then lives in that row).
    if (batch == 1 && right_padded && info.past_present_share_buffer && !shape.combined &&
        !internal_request) {
      if (auto b = DecodeBatcher::ForModel(m)) {
        const int row = b->Join(max_length);
        if (row >= 0) {
          brow.batcher = std::move(b);
          brow.row = row;
        }
      }
    }
    if (brow.batcher) {
      DecodeBatcher* b = brow.batcher.get();  // outlives the cache (BatchRow is declared first)
      const int row = brow.row;
      kv = KvCache::CreateSlot(m.kv_pool(), shape, mode, max_length, m.options().kv_chunk_tokens,
                               [b, row] { return b->SlotView(row); });
    } else {
      kv = KvCache::Create(m.kv_pool(), shape, info.past_present_share_buffer, mode, max_length,
                           m.options().kv_chunk_tokens);
    }

    internal::SamplerConfig sc;
    sc.do_sample = do_sample;
    sc.top_k = top_k;
    sc.top_p = top_p;
    sc.temperature = temperature;
    sc.repetition_penalty = repetition_penalty;
    sc.presence_penalty = p.presence_penalty;
    sc.frequency_penalty = p.frequency_penalty;
    sc.logit_bias.assign(p.logit_bias.begin(), p.logit_bias.end());
    sc.top_logprobs = want_logprobs ? p.top_logprobs : -1;
    for (int b = 0; b < batch; ++b) {
      sc.seed = p.seed + static_cast<uint64_t>(b) * 0x9E3779B97F4A7C15ull;
      samplers.emplace_back(sc);
    }
    sequences.resize(batch);
    lens.assign(batch, 0);
    mask.resize(batch);
    pending.resize(batch);
    done.assign(batch, false);
  }

  // Compiles the request's constraint (through the model's cache) and gives each row a state.
  // Before any KV is reserved: a bad schema costs nothing but the error.
  void MakeConstraints(const GeneratorParams& p) {
    std::vector<std::pair<constrain::ConstraintSpec::Kind, const std::string*>> given;
    if (!p.json_schema.empty())
      given.emplace_back(constrain::ConstraintSpec::Kind::kJsonSchema, &p.json_schema);
    if (!p.regex.empty()) given.emplace_back(constrain::ConstraintSpec::Kind::kRegex, &p.regex);
    if (!p.grammar.empty())
      given.emplace_back(constrain::ConstraintSpec::Kind::kGrammar, &p.grammar);
    if (given.size() > 1) {
      throw Error(ErrorCode::InvalidArgument,
                  "json_schema, regex and grammar each constrain the whole output: give one of "
                  "them, not " +
                      std::string(constrain::KindName(given[0].first)) + " and " +
                      std::string(constrain::KindName(given[1].first)));
    }
    if (given.empty()) {
      for (const auto& [key, v] :
           {std::pair<const char*, const std::string*>{"constraint_trigger", &p.constraint_trigger},
            {"constraint_prefix", &p.constraint_prefix},
            {"constraint_suffix", &p.constraint_suffix}}) {
        if (!v->empty()) {
          throw Error(ErrorCode::InvalidArgument,
                      std::string(key) +
                          " belongs to a constraint, and none is set: add json_schema, regex or "
                          "grammar");
        }
      }
      return;
    }
    if (!m.constraints()) {
      throw Error(ErrorCode::FailedPrecondition,
                  "model '" + m.id() +
                      "' cannot take json_schema, regex or grammar: it is not a "
                      "text generator");
    }
    constrain::ConstraintSpec spec;
    spec.kind = given[0].first;
    spec.text = *given[0].second;
    spec.trigger = p.constraint_trigger;
    spec.prefix = p.constraint_prefix;
    spec.suffix = p.constraint_suffix;
    auto compiled = m.constraints()->Get(spec);
    for (int b = 0; b < p.batch_size; ++b) {
      constraints.push_back(std::make_unique<constrain::ConstraintState>(compiled));
    }
    done.assign(p.batch_size, false);
    batch = p.batch_size;
    QueueForced(0);  // what the grammar forces from its start (`{"` of an object, ...)
  }

  // After row b took token t: the constraint follows it, and for a batch of one queues what
  // is forced next (EOS once the text is complete and nothing can extend it).
  void AdvanceConstraint(int b, int32_t t) {
    if (constraints.empty()) return;
    const auto t0 = Clock::now();
    constraints[b]->Accept(t, m.info().eos_token_ids);
    QueueForced(b);
    stats.constraint_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  void QueueForced(int b) {
    constrain::ConstraintState& c = *constraints[b];
    const auto& eos = m.info().eos_token_ids;
    if (batch != 1 || done[b] || !forced.empty()) return;
    if (c.Complete()) {
      if (!eos.empty()) forced.push_back(eos[0]);
      return;
    }
    const std::vector<int32_t> f = c.ForcedTokens(32);
    // Ids past the graph's logits cannot be fed.
    for (const int32_t id : f) {
      if (id >= m.info().vocab_size) break;
      forced.push_back(id);
    }
    std::reverse(forced.begin(), forced.end());  // popped from the back
  }

  // A forced token for the (batch of one) row: taken like a sampled one, without a model step.
  bool TakeForced() {
    if (forced.empty() || batch != 1 || done[0]) return false;
    const int32_t t = forced.back();
    forced.pop_back();
    ++stats.forced_tokens;
    next_tokens.assign(1, t);
    if (want_logprobs) next_logprobs.assign(1, TokenLogprobs{t, 0, {}});
    sequences[0].push_back(t);
    pending[0].push_back(t);
    ++stats.generated_tokens;
    const auto& eos = m.info().eos_token_ids;
    if (std::find(eos.begin(), eos.end(), t) != eos.end()) done[0] = true;
    AdvanceConstraint(0, t);
    return true;
  }

  int32_t LogicalWidth() const {
    size_t extra = 0;
    for (const auto& p : pending) extra = std::max(extra, p.size());
    return width + static_cast<int32_t>(extra);
  }

  // Right-padded (GQA) graphs: each row runs to max_length real tokens on its own. Left-padded
  // graphs share one padded width, so max_length bounds that width (as in onnxruntime-genai).
  bool AllDone() const {
    if (!right_padded && LogicalWidth() >= max_length) return true;
    return std::all_of(done.begin(), done.end(), [](bool d) { return d; });
  }

  void MarkFullRows() {
    if (!right_padded) return;
    for (int b = 0; b < batch; ++b) {
      if (static_cast<int32_t>(sequences[b].size()) >= max_length) done[b] = true;
    }
  }

  void CheckTokens(const std::vector<std::vector<int32_t>>& rows) const {
    for (size_t b = 0; b < rows.size(); ++b) {
      for (size_t i = 0; i < rows[b].size(); ++i) {
        const int32_t t = rows[b][i];
        if (t < 0 || t >= m.info().vocab_size) {
          throw Error(ErrorCode::InvalidArgument,
                      "token id " + std::to_string(t) + " at row " + std::to_string(b) +
                          ", position " + std::to_string(i) + " is outside the vocabulary [0, " +
                          std::to_string(m.info().vocab_size) + ")");
        }
      }
    }
  }

  void Append(const std::vector<std::vector<int32_t>>& rows) {
    const auto t0 = Clock::now();
    if (static_cast<int32_t>(rows.size()) != batch) {
      throw Error(ErrorCode::InvalidArgument, "AppendTokens got " + std::to_string(rows.size()) +
                                                  " rows but the generator's batch_size is " +
                                                  std::to_string(batch));
    }
    if (AllDone() && started) {
      throw Error(ErrorCode::FailedPrecondition,
                  "the generator is done (EOS or max_length reached); call RewindTo(n) to "
                  "continue from an earlier point, or create a new generator");
    }
    if (batch > 1 && started) {
      throw Error(ErrorCode::FailedPrecondition,
                  "with batch_size > 1, AppendTokens is allowed once, before generation");
    }
    size_t longest = 0;
    for (const auto& r : rows) {
      if (r.empty()) {
        throw Error(ErrorCode::InvalidArgument, "AppendTokens: every row needs at least one token");
      }
      longest = std::max(longest, r.size());
    }
    CheckTokens(rows);
    size_t total = static_cast<size_t>(LogicalWidth()) + longest;
    if (right_padded) {
      total = 0;
      for (int b = 0; b < batch; ++b) {
        total = std::max(total, sequences[b].size() + pending[b].size() + rows[b].size());
      }
    }
    if (total > static_cast<size_t>(max_length)) {
      throw Error(ErrorCode::InvalidArgument, "the prompt needs " + std::to_string(total) +
                                                  " tokens but max_length is " +
                                                  std::to_string(max_length) + " (context_length " +
                                                  std::to_string(m.info().context_length) +
                                                  "); shorten the prompt or raise max_length");
    }
    if (!started) {
      started = true;
      t_first_append = t0;
    }
    // A first prompt of one row may start from the prefix cache: its first `reused` tokens'
    // KV is copied in and only the rest is prefilled.
    const int reused = width == 0 && pending[0].empty() ? ImportPrefix(rows[0]) : 0;
    std::vector<std::vector<int32_t>> feed = pending;
    for (int b = 0; b < batch; ++b) {
      feed[b].insert(feed[b].end(), rows[b].begin() + (b == 0 ? reused : 0), rows[b].end());
    }
    try {
      Run(feed);  // throws: nothing was changed (but the imported prefix, undone here)
    } catch (...) {
      if (reused > 0) {
        lens[0] = 0;
        width = 0;
        mask[0].clear();
      }
      throw;
    }
    for (int b = 0; b < batch; ++b) {
      sequences[b].insert(sequences[b].end(), rows[b].begin(), rows[b].end());
      pending[b].clear();
    }
    stats.cached_tokens += static_cast<uint64_t>(reused);
    StorePrefixes();
    MarkFullRows();
    stats.prompt_tokens += [&] {
      uint64_t n = 0;
      for (const auto& r : rows) n += r.size();
      return n;
    }();
  }

  // The prefix cache's longest match for a one-row first prompt, copied into the empty KV as
  // the past (generate/prefix_import.h). Returns the tokens reused (0: none).
  int ImportPrefix(const std::vector<int32_t>& prompt) {
    if (!cache_prompt || batch != 1) return 0;
    const int n = internal::ImportPrefix(*m.prefix_cache(), *kv, {brow.batcher.get(), brow.row},
                                         prompt, !internal_request);
    if (n == 0) return 0;
    lens[0] = n;
    width = n;
    if (!right_padded) mask[0].assign(static_cast<size_t>(n), 1);
    return n;
  }

  // Stores the KV of each row's tokens held in the cache (generate/prefix_import.h). Rows whose
  // positions are not their tokens' (left padding) are skipped. Never throws.
  void StorePrefixes() {
    if (!cache_prompt) return;
    std::vector<internal::StoredRow> rows(static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) {
      const int held = std::min<int>(lens[b], static_cast<int>(sequences[b].size()));
      rows[b].tokens = &sequences[b];
      rows[b].held = held;
      rows[b].aligned =
          right_padded || (width == held && mask[b].size() == static_cast<size_t>(held) &&
                           std::find(mask[b].begin(), mask[b].end(), 0) == mask[b].end());
    }
    internal::StorePrefixes(*m.prefix_cache(), *kv, {brow.batcher.get(), brow.row}, width, rows,
                            m.id());
  }

  // Runs `feed` (per row, appended after the KV contents) through the model, in chunks where
  // the graph allows, and leaves the last position's logits in `logits`.
  void Run(const std::vector<std::vector<int32_t>>& feed) {
    size_t longest = 0;
    for (const auto& r : feed) longest = std::max(longest, r.size());
    if (longest == 0) return;
    // ORT's GQA takes a multi-token step after a past only for a batch of one.
    const bool can_chunk = !right_padded || batch == 1;
    size_t chunk = (prefill_chunk > 0 && can_chunk) ? static_cast<size_t>(prefill_chunk) : longest;
    // A batch member's prompt holds up the other members' steps for as long as each of its Runs
    // takes: while the batcher has other members, feed it in decode_batch.prefill_chunk chunks,
    // the steps going between them (DecodeBatcher::LockEngineForPrompt).
    const int32_t member_chunk = m.options().decode_batch_prefill_chunk;
    if (brow.batcher && can_chunk && member_chunk > 0 && longest > 1 &&
        static_cast<size_t>(member_chunk) < chunk && brow.batcher->HasOtherMembers(brow.row)) {
      chunk = static_cast<size_t>(member_chunk);
    }
    if (right_padded && batch > 1 && width > 0 && longest > 1) {
      throw Error(ErrorCode::FailedPrecondition,
                  "this graph (GroupQueryAttention) cannot append several tokens to a batch "
                  "with a past");
    }
    // Left-padded graphs align rows on the right: pad each row to `longest`.
    std::vector<std::vector<int32_t>> cols(batch);
    std::vector<int32_t> n_real(batch);
    for (int b = 0; b < batch; ++b) {
      // A finished row is still fed (a pad) to keep the batch aligned, but does not advance.
      n_real[b] = right_padded && done[b] ? 0 : static_cast<int32_t>(feed[b].size());
      const size_t pad = longest - feed[b].size();
      if (right_padded) {
        cols[b] = feed[b];
        cols[b].resize(longest, m.info().pad_token_id);
      } else {
        cols[b].assign(pad, m.info().pad_token_id);
        cols[b].insert(cols[b].end(), feed[b].begin(), feed[b].end());
      }
    }
    // Work on copies so that a failed Run changes nothing.
    std::vector<int32_t> new_lens = lens;
    std::vector<std::vector<uint8_t>> new_mask = mask;
    int32_t new_width = width;
    int32_t need = width + static_cast<int32_t>(longest);
    if (right_padded) {
      need = 0;
      for (int b = 0; b < batch; ++b) need = std::max(need, lens[b] + n_real[b]);
    }
    kv->Reserve(need);  // may throw ResourceExhausted; nothing has changed yet
    std::vector<float> new_logits(static_cast<size_t>(batch) * m.info().vocab_size);
    // Several chunks on a ping-pong cache overwrite the committed past: keep it for a rollback.
    kv->BeginSteps(width, static_cast<int>((longest + chunk - 1) / chunk));  // may throw

    int commits = 0;
    try {
      for (size_t start = 0; start < longest; start += chunk) {
        const size_t S = std::min(chunk, longest - start);
        const int32_t P = new_width;
        // Mask width: left-padded rows share every column; right-padded rows only need the
        // longest row's valid length (GQA's total_sequence_length).
        int32_t T = P + static_cast<int32_t>(S);
        if (right_padded) {
          T = 0;
          for (int b = 0; b < batch; ++b) {
            T = std::max(T, new_lens[b] + std::clamp(n_real[b] - static_cast<int32_t>(start), 0,
                                                     static_cast<int32_t>(S)));
          }
          // A ping-pong present is never narrower than its past (GQA: max(T, P)).
          T = std::max({T, static_cast<int32_t>(S), P});
        }
        step_feed.Reset(batch, static_cast<int64_t>(S), T);
        for (int b = 0; b < batch; ++b) {
          const int32_t* tokens = cols[b].data() + start;
          if (right_padded) {
            // Row b's real tokens in this chunk: columns [start, min(n_real, start + S)).
            const int32_t real_here =
                std::clamp(n_real[b] - static_cast<int32_t>(start), 0, static_cast<int32_t>(S));
            const int32_t valid = new_lens[b] + real_here;
            step_feed.PutRightPaddedRow(b, tokens, new_lens[b], valid, real_here);
            new_lens[b] = valid;
          } else {
            auto& mrow = new_mask[b];
            for (size_t i = 0; i < S; ++i) {
              mrow.push_back(start + i >= longest - static_cast<size_t>(n_real[b]) ? 1 : 0);
            }
            new_lens[b] +=
                static_cast<int32_t>(step_feed.PutLeftPaddedRow(b, tokens, mrow, new_lens[b]));
          }
        }
        RunOnce(P, T, new_logits);
        ++commits;
        new_width = T;
      }
    } catch (...) {
      kv->UndoSteps(commits);
      throw;
    }
    kv->EndSteps();
    // Commit.
    lens = std::move(new_lens);
    mask = std::move(new_mask);
    width = new_width;
    logits = std::move(new_logits);
    logits_valid = true;
    // A long unchunked prompt leaves a large logits buffer; do not keep it for decoding.
    step_feed.TrimLogits(4 * logits.size() * sizeof(float));
  }

  // Runs the step built in `step_feed` (mask width T_cols) on a past of P columns, commits it to
  // the KV cache and leaves each row's wanted logits in `out_logits` ([batch, vocab] float32).
  void RunOnce(int32_t P, int32_t T_cols, std::vector<float>& out_logits) {
    internal::StepBinding bind;
    step_feed.Bind(bind);
    // A batch member's own Run() writes its row of the batcher's memory: not during a step, and
    // the row (which may move when the batcher widens) is bound under the same lock.
    internal::DecodeBatcher::PromptTurn engine;
    if (brow.batcher) {
      engine = brow.batcher->LockEngineForPrompt();
      brow.batcher->EnsureColumns(T_cols);
    }
    std::vector<Ort::Value> past, present;
    // The present is as wide as the mask: P + S on left-padded graphs; on right-padded (GQA)
    // graphs the longest row's length, which stays P while that row is done.
    kv->BindStep(P, T_cols - P, m.cpu_memory(), past, present);
    bind.Kv(m.io().past_names, m.io().present_names, past, present);
    internal::StepDesc desc;
    desc.kind = internal::StepKind::kDecode;
    desc.prefill_chunk = prefill_chunk;
    m.runner().Run(bind, desc, [this] { BeginRequest(); });
    if (brow.batcher) brow.batcher->NoteWritten(brow.row, T_cols);
    if (engine.owns_lock()) engine.unlock();
    ++stats.model_runs;
    kv->CommitStep();
    // Keep only the wanted position of each row, as float32.
    const int64_t V = m.info().vocab_size;
    for (int64_t b = 0; b < batch; ++b) step_feed.Logits(b, out_logits.data() + b * V);
  }

  // Runs the model on the tokens sampled since the last run (none: nothing to do), so `logits`
  // holds what the next Next() samples from.
  void Compute() {
    if (!started) {
      throw Error(ErrorCode::FailedPrecondition,
                  "the logits are computed from a prompt: append one first (AppendTokens)");
    }
    if (logits_valid || AllDone()) return;
    if (brow.batcher && pending[0].size() == 1 && lens[0] > 0 && !done[0]) {
      StepBatched();
    } else {
      Run(pending);
    }
    for (auto& p : pending) p.clear();
  }

  Generator::Output OutputCopy(std::string_view name) {
    Compute();
    Generator::Output out;
    const int64_t V = m.info().vocab_size;
    if (name == "logits") {
      out.element_type = "float32";
      out.shape = {batch, 1, V};
      out.data.resize(logits.size() * sizeof(float));
      std::memcpy(out.data.data(), logits.data(), out.data.size());
      return out;
    }
    const auto& names = m.io().present_names;
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      std::string known = "\"logits\"";
      for (size_t i = 0; i < names.size() && i < 4; ++i) known += ", \"" + names[i] + "\"";
      if (names.size() > 4) known += ", ... (" + std::to_string(names.size()) + " KV outputs)";
      throw Error(ErrorCode::InvalidArgument, "GetOutput: the decoder has no output \"" +
                                                  std::string(name) + "\"; it has " + known);
    }
    if (brow.batcher) {
      throw Error(ErrorCode::FailedPrecondition,
                  "GetOutput(\"" + std::string(name) +
                      "\"): this generator's KV is a row of the batched decode "
                      "(decode_batch.max_rows > 1); load the model with decode_batch.max_rows=1 to "
                      "read it");
    }
    if (m.kv_pool().device() != nullptr) {
      throw Error(ErrorCode::FailedPrecondition,
                  "GetOutput(\"" + std::string(name) + "\"): the KV is on " +
                      m.kv_pool().device()->name() +
                      "; KV outputs are copied from host memory only");
    }
    const internal::KvShape& shape = m.kv_shape();
    const size_t idx = static_cast<size_t>(it - names.begin());
    // KvCache::ReadPositions lays a row out as [tensor (layer-major, K then V)][head][n][d].
    std::vector<int> tensors;
    if (m.io().combined_kv) {
      tensors = {static_cast<int>(2 * idx), static_cast<int>(2 * idx + 1)};
    } else {
      tensors = {static_cast<int>(idx)};
    }
    const int W = width;
    const size_t block =
        static_cast<size_t>(shape.kv_heads) * W * shape.head_size * shape.elem_bytes;
    out.element_type = shape.elem_bytes == 2 ? "float16" : "float32";
    out.shape = {batch, shape.kv_heads, W, shape.head_size};
    if (m.io().combined_kv) out.shape.insert(out.shape.begin(), 2);
    out.data.resize(tensors.size() * static_cast<size_t>(batch) * block);
    std::vector<char> row(static_cast<size_t>(2 * shape.num_layers) * block);
    for (int b = 0; b < batch; ++b) {
      if (W > 0) kv->ReadPositions(W, b, 0, W, row.data());
      for (size_t k = 0; k < tensors.size(); ++k) {
        std::memcpy(out.data.data() + (k * batch + b) * block,
                    row.data() + static_cast<size_t>(tensors[k]) * block, block);
      }
    }
    return out;
  }

  void Next() {
    if (!started) {
      throw Error(ErrorCode::FailedPrecondition,
                  "GenerateNextToken before AppendTokens: append a prompt first");
    }
    if (AllDone()) {
      throw Error(ErrorCode::FailedPrecondition,
                  "the generator is done (EOS or max_length reached); check done() before "
                  "GenerateNextToken");
    }
    if (TakeForced()) {
      MarkFullRows();
      logits_valid = false;
      FinishStep();
      return;
    }
    Compute();
    const int64_t V = m.info().vocab_size;
    next_tokens.assign(batch, m.info().pad_token_id);
    if (want_logprobs) next_logprobs.assign(batch, TokenLogprobs{m.info().pad_token_id, 0, {}});
    for (int b = 0; b < batch; ++b) {
      if (done[b]) {
        pending[b].push_back(m.info().pad_token_id);
        continue;
      }
      std::vector<float>& row = row_logits;  // the sampler adjusts its copy in place
      row.assign(logits.begin() + b * V, logits.begin() + (b + 1) * V);
      // A NaN (or +inf) logit would make greedy pick token 0 and sampling the last id, silently.
      const auto bad = std::find_if(row.begin(), row.end(),
                                    [](float x) { return std::isnan(x) || x == INFINITY; });
      if (bad != row.end()) {
        throw Error(ErrorCode::Internal,
                    "the model produced " + std::string(std::isnan(*bad) ? "NaN" : "infinite") +
                        " logits at step " + std::to_string(sequences[b].size()) + " (sequence " +
                        std::to_string(b) + ", token id " + std::to_string(bad - row.begin()) +
                        "): its weights or inputs are broken; no token was generated");
      }
      int32_t t;
      if (constraints.empty()) {
        t = samplers[b].Sample(row, sequences[b]);
      } else {
        ConstraintFilter filter(*constraints[b], m.info().eos_token_ids, stats.constraint_ms);
        t = samplers[b].Sample(row, sequences[b], &filter);
        if (t < 0) {
          throw Error(ErrorCode::Internal,
                      std::string(constrain::KindName(constraints[b]->kind())) +
                          ": no token of the model's vocabulary can continue the constrained "
                          "output of sequence " +
                          std::to_string(b) +
                          " here (a grammar that needs "
                          "text the vocabulary cannot spell); no token was generated");
        }
      }
      if (want_logprobs) next_logprobs[b] = samplers[b].last_logprobs();
      next_tokens[b] = t;
      sequences[b].push_back(t);
      pending[b].push_back(t);
      ++stats.generated_tokens;
      const auto& eos = m.info().eos_token_ids;
      if (std::find(eos.begin(), eos.end(), t) != eos.end()) done[b] = true;
      AdvanceConstraint(b, t);
    }
    MarkFullRows();
    logits_valid = false;
    FinishStep();
  }

  // The end of a decode step: a finished generation ends its request; the first token's time.
  void FinishStep() {
    if (AllDone()) {
      if (brow.batcher) brow.batcher->Pause(brow.row);
      EndRequest();
    }
    if (!have_first_token) {
      have_first_token = true;
      t_first_token = Clock::now();
      stats.ttft_ms =
          std::chrono::duration<double, std::milli>(t_first_token - t_first_append).count();
    }
  }

  // One decode token of a batch member, in the model's next batched step (blocks until it ran).
  // Throws what the step threw; the generator is then as before (the token written at column
  // lens[0] is beyond its valid length).
  void StepBatched() {
    const int32_t p = lens[0];
    kv->Reserve(p + 1);  // charges a dynamic-mode growth; may throw ResourceExhausted
    std::vector<float> new_logits(static_cast<size_t>(m.info().vocab_size));
    BeginRequest();
    brow.batcher->Step(brow.row, pending[0][0], p, new_logits);
    ++stats.model_runs;
    lens[0] = p + 1;
    width = std::max(width, p + 1);
    logits = std::move(new_logits);
    logits_valid = true;
  }

  void Rewind(size_t length) {
    if (batch != 1) {
      throw Error(ErrorCode::FailedPrecondition, "RewindTo needs batch_size 1");
    }
    if (!constraints.empty()) {
      // The constraint's state follows the text forward only.
      throw Error(ErrorCode::FailedPrecondition,
                  "RewindTo is not available on a generator with json_schema, regex or grammar: "
                  "create a new generator for the new text");
    }
    if (length > sequences[0].size()) {
      throw Error(ErrorCode::InvalidArgument, "RewindTo(" + std::to_string(length) +
                                                  ") is past the sequence length " +
                                                  std::to_string(sequences[0].size()));
    }
    if (brow.batcher) brow.batcher->Pause(brow.row);
    // Keep length-1 tokens in the KV cache and re-run the last one to recompute its logits.
    const int32_t keep = length == 0 ? 0 : static_cast<int32_t>(length) - 1;
    const int32_t in_kv = kv->Rewind(width, std::min<int32_t>(width, keep));
    width = in_kv;
    lens[0] = in_kv;
    if (!mask[0].empty()) mask[0].resize(in_kv);
    sequences[0].resize(length);
    samplers[0].Truncate(length);
    pending[0].assign(sequences[0].begin() + in_kv, sequences[0].end());
    done[0] = false;
    logits_valid = false;
    logits.clear();
    next_tokens.clear();
    next_logprobs.clear();
    if (length == 0) started = false;
  }
};

Generator::Generator(std::shared_ptr<Model> model, const GeneratorParams& params) {
  if (!model) throw Error(ErrorCode::InvalidArgument, "Generator needs a loaded model");
  impl_ = std::make_unique<Impl>(std::move(model), params);
}

Generator::~Generator() {
  try {
    impl_->EndRequest();  // a generation abandoned before done() still ends its request
  } catch (...) {
    // A destructor never throws; a failed shrink has already been logged.
  }
}

namespace internal {
void RunShrinkStep(Model& model) {
  GeneratorParams p;
  p.max_length = 1;
  p.kv_mode = KvMode::kStatic;
  t_internal_step = true;
  try {
    Generator g(model.shared_from_this(), p);
    t_internal_step = false;
    g.AppendTokens(std::vector<int32_t>{model.info().pad_token_id});
  } catch (...) {
    t_internal_step = false;
    throw;
  }
}
void RunPrefillStep(Model& model, std::span<const int32_t> tokens) {
  GeneratorParams p;
  p.max_length = static_cast<int32_t>(std::min<size_t>(tokens.size() + 1, INT32_MAX));
  p.kv_mode = KvMode::kDynamic;
  t_internal_step = true;
  t_internal_cache = true;
  try {
    Generator g(model.shared_from_this(), p);
    t_internal_step = false;
    t_internal_cache = false;
    g.AppendTokens(tokens);
  } catch (...) {
    t_internal_step = false;
    t_internal_cache = false;
    throw;
  }
}
// Built on the Run path's one fault seam (model/step_runner.h): the hook counts this thread's
// generator steps (kDecode; not batched steps, not embeddings).
void FailNthRunForTesting(int n) {
  t_fail_run_countdown = n > 0 ? n : 0;
  if (n <= 0) return;  // a hook left installed costs nothing here: the countdown is 0
  SetStepFaultForTesting([](const Model&, const StepDesc& step) -> std::string {
    if (step.kind != StepKind::kDecode || t_fail_run_countdown <= 0) return "";
    if (--t_fail_run_countdown > 0) return "";
    return "injected Run() failure (FailNthRunForTesting)";
  });
}
}  // namespace internal

// One call of a generator that may run the model: Unload waits for it to end, and it refuses to
// start once the model was unloaded (ModelImpl::BeginCall). A call that throws marks the request
// as failed (its outcome, when it ends, is kError).
template <typename F>
void Generator::Impl::Call(F&& fn) {
  m.BeginCall(slot.id);
  try {
    fn();
  } catch (...) {
    failed = true;
    m.EndCall(slot.id, started && !AllDone());
    throw;
  }
  // Open from the first appended token (Append only queues; the Run comes with the next call)
  // until the generation is done.
  m.EndCall(slot.id, started && !AllDone());
}

void Generator::AppendTokens(std::span<const int32_t> tokens) {
  impl_->Call([&] { impl_->Append({std::vector<int32_t>(tokens.begin(), tokens.end())}); });
}

void Generator::AppendTokens(const std::vector<std::vector<int32_t>>& rows) {
  impl_->Call([&] { impl_->Append(rows); });
}

void Generator::GenerateNextToken() {
  impl_->Call([&] { impl_->Next(); });
}

bool Generator::done() const { return impl_->started && impl_->AllDone(); }

std::span<const int32_t> Generator::sequence(size_t row) const {
  if (row >= impl_->sequences.size()) {
    throw Error(ErrorCode::InvalidArgument, "sequence(" + std::to_string(row) +
                                                "): batch_size is " + std::to_string(impl_->batch));
  }
  return impl_->sequences[row];
}

std::vector<int32_t> Generator::GetNextTokens() const { return impl_->next_tokens; }

std::vector<TokenLogprobs> Generator::GetNextLogprobs() const { return impl_->next_logprobs; }

std::span<const float> Generator::GetLogits() const {
  if (!impl_->logits_valid && impl_->logits.empty()) return {};
  return impl_->logits;
}

void Generator::ComputeLogits() {
  impl_->Call([&] { impl_->Compute(); });
}

Generator::Output Generator::GetOutput(std::string_view name) {
  Output out;
  impl_->Call([&] { out = impl_->OutputCopy(name); });
  return out;
}

void Generator::SetLogits(std::span<const float> logits) {
  impl_->Call([&] {
    impl_->Compute();
    if (impl_->AllDone()) {
      throw Error(ErrorCode::FailedPrecondition,
                  "SetLogits: the generator is done (EOS or max_length reached)");
    }
    const size_t want = static_cast<size_t>(impl_->batch) * impl_->m.info().vocab_size;
    if (logits.size() != want) {
      throw Error(ErrorCode::InvalidArgument,
                  "SetLogits: " + std::to_string(logits.size()) + " values given; the logits are " +
                      std::to_string(impl_->batch) + " rows x vocab_size " +
                      std::to_string(impl_->m.info().vocab_size) + " = " + std::to_string(want));
    }
    impl_->logits.assign(logits.begin(), logits.end());
    impl_->logits_valid = true;
  });
}

void Generator::RewindTo(size_t length) { impl_->Rewind(length); }

int32_t Generator::max_length() const { return impl_->max_length; }

GeneratorStats Generator::Stats() const {
  GeneratorStats s = impl_->stats;
  s.kv_bytes = impl_->kv->bytes();
  if (impl_->have_first_token && s.generated_tokens > static_cast<uint64_t>(impl_->batch)) {
    const double secs = std::chrono::duration<double>(Clock::now() - impl_->t_first_token).count();
    const double after_first = static_cast<double>(s.generated_tokens - impl_->batch);
    if (secs > 0) s.decode_tokens_per_s = after_first / secs;
  }
  return s;
}

}  // namespace ebb
