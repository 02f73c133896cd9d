#include "generate/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ebb::internal {

int32_t ArgMax(std::span<const float> values) {
  return static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

Sampler::Sampler(const SamplerConfig& config)
    : config_(config),
      penalized_(config.presence_penalty != 0.0f || config.frequency_penalty != 0.0f),
      rng_(config.seed) {}

bool Sampler::Greedy() const {
  // top_p 0 keeps only the most likely token: greedy, as temperature 0 and top_k 1 are.
  return !config_.do_sample || config_.temperature <= 0.0f || config_.top_k == 1 ||
         config_.top_p <= 0.0f;
}

int32_t Sampler::Sample(std::span<float> logits, std::span<const int32_t> history,
                        TokenFilter* filter) {
  Adjust(logits, history);
  if (filter != nullptr) {
    // Masked logits are -inf, which the penalties and bias keep at -inf: filtering after them
    // picks what filtering before them would.
    int32_t t = -1;
    if (Greedy() && config_.top_logprobs < 0) {
      t = ArgMax(logits);
      if (!filter->Allows(t)) t = -1;
    }
    if (t < 0) {
      if (!filter->Mask(logits)) return -1;
      t = Choose(logits);
    }
    if (penalized_) Record(t, history.size(), logits.size());
    if (config_.top_logprobs >= 0) ComputeLogprobs(logits, t);
    return t;
  }
  const int32_t t = Choose(logits);
  if (penalized_) Record(t, history.size(), logits.size());
  if (config_.top_logprobs >= 0) ComputeLogprobs(logits, t);
  return t;
}

void Sampler::Adjust(std::span<float> logits, std::span<const int32_t> history) {
  const size_t vocab = logits.size();
  if (config_.repetition_penalty != 1.0f && !history.empty()) {
    // HF semantics: divide positive logits, multiply negative ones, once per distinct token.
    seen_.resize(vocab);
    for (int32_t t : history) {
      if (t < 0 || static_cast<size_t>(t) >= vocab || seen_[t]) continue;
      seen_[t] = 1;
      float& l = logits[t];
      l = l > 0 ? l / config_.repetition_penalty : l * config_.repetition_penalty;
    }
    for (int32_t t : history) {
      if (t >= 0 && static_cast<size_t>(t) < vocab) seen_[t] = 0;
    }
  }
  // OpenAI's presence and frequency penalties, over the tokens this sampler chose.
  for (int32_t t : distinct_) {
    if (static_cast<size_t>(t) >= vocab) continue;
    logits[t] -=
        config_.frequency_penalty * static_cast<float>(counts_[t]) + config_.presence_penalty;
  }
  for (const auto& [t, bias] : config_.logit_bias) {
    if (static_cast<size_t>(t) < vocab) logits[t] += bias;
  }
}

void Sampler::Record(int32_t token, size_t position, size_t vocab) {
  if (token < 0) return;
  // Sized once, to the vocabulary, at the first token: later tokens never grow it.
  if (counts_.size() <= static_cast<size_t>(token)) {
    counts_.resize(std::max(vocab, static_cast<size_t>(token) + 1));
  }
  if (counts_[token]++ == 0) distinct_.push_back(token);
  sampled_.emplace_back(position, token);
}

void Sampler::Truncate(size_t length) {
  while (!sampled_.empty() && sampled_.back().first >= length) {
    const int32_t t = sampled_.back().second;
    sampled_.pop_back();
    if (--counts_[t] == 0) distinct_.erase(std::find(distinct_.begin(), distinct_.end(), t));
  }
}

namespace {

// SelectTop's heap comparator: true when `a` ranks above `b` (a larger value, or an equal value
// and a lower id), so the heap's front is the worst entry kept, and sort_heap puts the best
// first.
bool Worse(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// The n best (value, id) of `logits` into `heap` (a min-heap under Worse; `heap` is reused
// scratch, so nothing is allocated per token once it has grown). One pass: the comparison with
// the heap's minimum is almost always false and well predicted, unlike nth_element's
// partitioning. A later equal value never replaces an earlier one.
void SelectTop(std::span<const float> logits, size_t n,
               std::vector<std::pair<float, int32_t>>& heap) {
  heap.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (heap.size() < n) {
      heap.emplace_back(v, static_cast<int32_t>(i));
      std::push_heap(heap.begin(), heap.end(), Worse);
    } else if (v > heap.front().first) {
      std::pop_heap(heap.begin(), heap.end(), Worse);
      heap.back() = {v, static_cast<int32_t>(i)};
      std::push_heap(heap.begin(), heap.end(), Worse);
    }
  }
}

}  // namespace

void Sampler::ComputeLogprobs(std::span<const float> logits, int32_t chosen) {
  const size_t vocab = logits.size();
  last_.id = chosen;
  last_.top.clear();
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(max_logit)) {  // every logit -inf: nothing has any probability
    last_.logprob = -std::numeric_limits<float>::infinity();
    return;
  }
  double total = 0;
  for (const float l : logits) total += std::exp(l - max_logit);  // float exp: 2x a double's
  const double log_z = max_logit + std::log(total);
  last_.logprob = static_cast<float>(logits[chosen] - log_z);
  const size_t n = std::min<size_t>(static_cast<size_t>(config_.top_logprobs), vocab);
  if (n == 0) return;
  SelectTop(logits, n, heap_);
  std::sort_heap(heap_.begin(), heap_.end(), Worse);  // best first
  for (const auto& [v, id] : heap_) {
    last_.top.push_back({id, static_cast<float>(v - log_z)});
  }
}

int32_t Sampler::Choose(std::span<float> logits) {
  const size_t vocab = logits.size();
  if (Greedy()) return ArgMax(logits);

  const float inv_t = 1.0f / config_.temperature;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  auto desc = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };

  size_t n = vocab;
  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < vocab) {
    n = static_cast<size_t>(config_.top_k);
    SelectTop(logits, n, heap_);
    candidates_.clear();
    for (const auto& [v, id] : heap_) candidates_.push_back(id);
  } else {
    candidates_.resize(vocab);
    std::iota(candidates_.begin(), candidates_.end(), 0);
  }
  // Softmax weights relative to the max; the normaliser covers the candidate set.
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += std::exp((logits[candidates_[i]] - max_logit) * inv_t);

  if (config_.top_p < 1.0f && config_.top_p > 0.0f) {
    // Sort only as large a prefix as the nucleus needs: 64, 256, 1024, ... candidates.
    size_t sorted = 0;
    size_t keep = n;
    for (size_t want = std::min<size_t>(64, n);; want = std::min(n, want * 4)) {
      std::partial_sort(candidates_.begin() + sorted, candidates_.begin() + want,
                        candidates_.begin() + n, desc);
      sorted = want;
      double cum = 0;
      size_t i = 0;
      for (; i < sorted; ++i) {
        cum += std::exp((logits[candidates_[i]] - max_logit) * inv_t) / total;
        if (cum >= config_.top_p) break;
      }
      if (i < sorted) {
        keep = i + 1;
        break;
      }
      if (sorted == n) break;
    }
    n = keep;
    total = 0;
    for (size_t i = 0; i < n; ++i) total += std::exp((logits[candidates_[i]] - max_logit) * inv_t);
  }
  std::uniform_real_distribution<double> uni(0.0, total);
  double r = uni(rng_);
  // A candidate of weight 0 (a -inf logit: masked by a constraint) is never returned.
  int32_t last = candidates_[0];
  for (size_t i = 0; i < n; ++i) {
    const double w = std::exp((logits[candidates_[i]] - max_logit) * inv_t);
    if (w <= 0) continue;
    last = candidates_[i];
    r -= w;
    if (r <= 0) return last;
  }
  return last;
}

}  // namespace ebb::internal
