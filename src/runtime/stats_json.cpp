#include "runtime/stats_json.h"

#include <span>

#include "ebb/error.h"

namespace ebb {
namespace internal {

StatsJson ProcessMemoryJson(const ProcessMemory& p) {
  return {{"rss_bytes", p.rss_bytes},
          {"peak_rss_bytes", p.peak_rss_bytes},
          {"anon_bytes", p.anon_bytes},
          {"file_bytes", p.file_bytes},
          {"shmem_bytes", p.shmem_bytes}};
}

StatsJson KvStatsJson(const KvStats& kv) {
  return {{"in_use_bytes", kv.in_use_bytes},
          {"retained_bytes", kv.retained_bytes},
          {"reserved_bytes", kv.reserved_bytes},
          {"peak_in_use_bytes", kv.peak_in_use_bytes},
          {"max_bytes", kv.max_bytes},
          {"retain_limit_bytes", kv.retain_limit_bytes},
          {"num_allocations", kv.num_allocations},
          {"num_os_maps", kv.num_os_maps},
          {"num_refusals", kv.num_refusals}};
}

StatsJson ArenaStatsJson(const ArenaStats& a) {
  return {{"available", a.available},
          {"in_use_bytes", a.in_use_bytes},
          {"total_allocated_bytes", a.total_allocated_bytes},
          {"max_in_use_bytes", a.max_in_use_bytes},
          {"num_allocs", a.num_allocs},
          {"num_extensions", a.num_extensions},
          {"num_shrinkages", a.num_shrinkages},
          {"limit_bytes", a.limit_bytes}};
}

StatsJson WeightsMemoryJson(const WeightsMemory& w) {
  return {{"state", WeightsStateName(w.state)},
          {"anon_bytes", w.anon_bytes},
          {"file_backed_bytes", w.file_backed_bytes},
          {"file_resident_bytes", w.file_resident_bytes},
          {"num_releases", w.num_releases},
          {"load_ms", w.load_ms},
          {"load_peak_anon_bytes", w.load_peak_anon_bytes},
          {"cache", w.cache},
          {"cache_build_peak_anon_bytes", w.cache_build_peak_anon_bytes}};
}

StatsJson PrefixCacheStatsJson(const PrefixCacheStats& c) {
  return {{"max_bytes", c.max_bytes},
          {"bytes", c.bytes},
          {"pinned_bytes", c.pinned_bytes},
          {"blocks", c.blocks},
          {"block_tokens", c.block_tokens},
          {"hits", c.hits},
          {"misses", c.misses},
          {"tokens_reused", c.tokens_reused},
          {"tokens_stored", c.tokens_stored},
          {"evicted_blocks", c.evicted_blocks},
          {"reclaimed_blocks", c.reclaimed_blocks}};
}

StatsJson DecodeBatchStatsJson(const DecodeBatchStats& d) {
  return {{"max_rows", d.max_rows}, {"steps", d.steps}, {"rows", d.rows}};
}

StatsJson PrefixPinJson(const PrefixPin& p) {
  return {{"tokens", p.tokens},
          {"pinned_tokens", p.pinned_tokens},
          {"pinned_bytes", p.pinned_bytes},
          {"pinned", p.pinned}};
}

StatsJson DeviceMemoryJson(const DeviceMemory& d) {
  return {{"available", d.available},
          {"device", d.device},
          {"adapter", d.adapter},
          {"kv", KvStatsJson(d.kv)},
          {"weights_bytes", d.weights_bytes},
          {"ort_cache_bytes", d.ort_cache_bytes},
          {"used_bytes", d.used_bytes},
          {"limit_bytes", d.limit_bytes},
          {"cache_mode", d.cache_mode},
          {"driver_process_bytes", d.driver_process_bytes},
          {"driver_used_bytes", d.driver_used_bytes},
          {"driver_total_bytes", d.driver_total_bytes}};
}

StatsJson MemoryStatsJson(const MemoryStats& s) {
  StatsJson j;
  j["process"] = ProcessMemoryJson(s.process);
  j["kv"] = KvStatsJson(s.kv);
  j["device"] = DeviceMemoryJson(s.device);
  j["cpu_arena"] = ArenaStatsJson(s.cpu_arena);
  j["num_shrinks"] = s.num_shrinks;
  j["num_requests"] = s.num_requests;
  j["policies"] = {{"shrink_every", s.shrink_every},
                   {"shrink_above_bytes", s.shrink_above_bytes},
                   {"ort_shrink_every_run", s.ort_shrink_every_run}};
  j["weights_bytes"] = s.weights_bytes;
  j["weights"] = WeightsMemoryJson(s.weights);
  j["prefix_cache"] = PrefixCacheStatsJson(s.prefix_cache);
  j["constraints"] = {
      {"max_bytes", s.constraints.max_bytes}, {"bytes", s.constraints.bytes},
      {"entries", s.constraints.entries},     {"vocabulary_bytes", s.constraints.vocabulary_bytes},
      {"hits", s.constraints.hits},           {"misses", s.constraints.misses},
      {"evicted", s.constraints.evicted}};
  j["decode_batch"] = DecodeBatchStatsJson(s.decode_batch);
  j["limit_bytes"] = s.limit_bytes;
  j["used_bytes"] = s.used_bytes;
  return j;
}

StatsJson WeightsReleaseJson(const WeightsRelease& r) {
  return {{"released", r.released},
          {"reason", r.reason},
          {"resident_before_bytes", r.resident_before_bytes},
          {"resident_after_bytes", r.resident_after_bytes},
          {"prefix_cache_freed_bytes", r.prefix_cache_freed_bytes}};
}

StatsJson ModelSummaryJson(const ModelSummary& s) {
  return {{"id", s.id},
          {"path", s.path.string()},
          {"type", s.type},
          {"is_encoder", s.is_encoder},
          {"kernels", s.kernels},
          {"weights_bytes", s.weights_bytes},
          {"weights", WeightsMemoryJson(s.weights)},
          {"kv", KvStatsJson(s.kv)},
          {"device", DeviceMemoryJson(s.device)},
          {"prefix_cache", PrefixCacheStatsJson(s.prefix_cache)},
          {"decode_batch", DecodeBatchStatsJson(s.decode_batch)},
          {"cpu_arena", ArenaStatsJson(s.cpu_arena)},
          {"live_generators", s.live_generators},
          {"requests_served", s.requests_served},
          {"last_used_unix_ms", s.last_used_unix_ms}};
}

StatsJson ModelSummariesJson(const std::vector<ModelSummary>& models) {
  StatsJson list = StatsJson::array();
  for (const ModelSummary& s : models) list.push_back(ModelSummaryJson(s));
  return list;
}

StatsJson ModelInfoJson(const Model& model) {
  const ModelInfo& i = model.info();
  return {{"id", model.id()},
          {"path", i.path.string()},
          {"type", i.type},
          {"is_encoder", i.is_encoder},
          {"vocab_size", i.vocab_size},
          {"context_length", i.context_length},
          {"num_layers", i.num_layers},
          {"num_kv_heads", i.num_kv_heads},
          {"head_size", i.head_size},
          {"uses_gqa", i.uses_gqa},
          {"past_present_share_buffer", i.past_present_share_buffer},
          {"last_position_logits", i.last_position_logits},
          {"eos_token_ids", i.eos_token_ids},
          {"pad_token_id", i.pad_token_id},
          {"bos_token_id", i.bos_token_id},
          {"kv_bytes_per_token", i.kv_bytes_per_token},
          {"kernels", i.kernels},
          {"weights_bytes", model.weights_bytes()}};
}

StatsJson GeneratorStatsJson(const GeneratorStats& s) {
  return {{"ttft_ms", s.ttft_ms},
          {"decode_tokens_per_s", s.decode_tokens_per_s},
          {"prompt_tokens", s.prompt_tokens},
          {"generated_tokens", s.generated_tokens},
          {"model_runs", s.model_runs},
          {"cached_tokens", s.cached_tokens},
          {"kv_bytes", s.kv_bytes}};
}

namespace {

std::string TokenText(const Tokenizer* tok, int32_t id) {
  if (tok == nullptr) return "";
  try {
    return tok->Decode(std::span<const int32_t>(&id, 1));
  } catch (const Error&) {
    return "\xEF\xBF\xBD";  // U+FFFD: an id the tokenizer does not have
  }
}

}  // namespace

StatsJson TokenLogprobsJson(const TokenLogprobs& lp, const Tokenizer* tok) {
  StatsJson top = StatsJson::array();
  for (const TokenLogprob& t : lp.top) {
    top.push_back({{"id", t.id}, {"token", TokenText(tok, t.id)}, {"logprob", t.logprob}});
  }
  return {{"id", lp.id},
          {"token", TokenText(tok, lp.id)},
          {"logprob", lp.logprob},
          {"top_logprobs", std::move(top)}};
}

StatsJson GenerateResultJson(const GenerateResult& r, const Tokenizer* tok, bool logprobs) {
  StatsJson rows = StatsJson::array();
  for (const GenerateRow& row : r.rows) {
    StatsJson lps = nullptr;
    if (logprobs) {
      lps = StatsJson::array();
      for (const TokenLogprobs& lp : row.logprobs) lps.push_back(TokenLogprobsJson(lp, tok));
    }
    rows.push_back({{"text", row.text},
                    {"prompt_ids", row.prompt_ids},
                    {"ids", row.generated_ids},
                    {"finish_reason", std::string(FinishReasonName(row.finish_reason))},
                    {"logprobs", std::move(lps)},
                    {"undecodable_tokens", row.undecodable_tokens}});
  }
  StatsJson error = nullptr;
  if (r.error) {
    error = {{"code", std::string(ErrorCodeName(r.error->code()))}, {"message", r.error->what()}};
  }
  return {{"rows", std::move(rows)},
          {"usage",
           {{"prompt_tokens", r.usage.prompt_tokens},
            {"completion_tokens", r.usage.completion_tokens},
            {"cached_tokens", r.usage.cached_tokens}}},
          {"stats", GeneratorStatsJson(r.stats)},
          {"max_length", r.max_length},
          {"error", std::move(error)}};
}

std::string DumpStatsJson(const StatsJson& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace internal

// The public text forms: each the dump of its one value above.
std::string ToJson(const MemoryStats& stats) {
  return internal::DumpStatsJson(internal::MemoryStatsJson(stats));
}
std::string ToJson(const WeightsRelease& release) {
  return internal::DumpStatsJson(internal::WeightsReleaseJson(release));
}
std::string ToJson(const PrefixPin& pin) {
  return internal::DumpStatsJson(internal::PrefixPinJson(pin));
}
std::string ToJson(const std::vector<ModelSummary>& models) {
  return internal::DumpStatsJson(internal::ModelSummariesJson(models));
}
std::string ToJson(const GeneratorStats& stats) {
  return internal::DumpStatsJson(internal::GeneratorStatsJson(stats));
}
std::string ToJson(const TokenLogprobs& logprobs, const Tokenizer* tok) {
  return internal::DumpStatsJson(internal::TokenLogprobsJson(logprobs, tok));
}
std::string ToJson(const GenerateResult& result, const Tokenizer* tok, bool logprobs) {
  return internal::DumpStatsJson(internal::GenerateResultJson(result, tok, logprobs));
}
std::string InfoJson(const Model& model) {
  return internal::DumpStatsJson(internal::ModelInfoJson(model));
}

}  // namespace ebb
