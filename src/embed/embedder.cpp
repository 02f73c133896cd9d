// ebb::Embed: tokenize, truncate, bucket by length, run the encoder batch by batch, pool,
// Matryoshka-cut and normalise. One call is one request of the model.
#include "embed/embedder.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"
#include "memory/shrink_controller.h"
#include "model/model_host.h"
#include "model/model_views.h"
#include "model/step_runner.h"
#include "ort/index_tensor.h"

namespace ebb {
namespace internal {
namespace {

using Clock = std::chrono::steady_clock;

// Holds one of the model's slots while the call runs, so that an Unload waits for it.
struct EmbedSlot {
  explicit EmbedSlot(RunView m) : model(m), slot(model.AcquireSlot(/*in_call=*/true)) {}
  ~EmbedSlot() { model.ReleaseSlot(slot); }
  EmbedSlot(const EmbedSlot&) = delete;
  EmbedSlot& operator=(const EmbedSlot&) = delete;
  RunView model;
  uint64_t slot;
};

// Runs one padded batch; returns the requested output (last_hidden_state [B, L, H] or the
// pooled [B, H]). Runs through the model's StepRunner like every step.
Ort::Value RunBatch(RunView m, const std::vector<const std::vector<int32_t>*>& rows,
                    const std::string& output) {
  const EncoderIo& io = m.encoder();
  const int64_t B = static_cast<int64_t>(rows.size());
  int64_t L = 0;
  for (const auto* r : rows) L = std::max<int64_t>(L, static_cast<int64_t>(r->size()));
  const std::vector<int64_t> dims{B, L};
  IndexTensor ids{io.input_ids_type, {}, {}}, mask{io.attention_mask_type, {}, {}},
      types{io.token_type_ids_type, {}, {}};
  ids.Fill(B * L);
  mask.Fill(B * L);
  types.Fill(B * L);
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = *rows[b];
    for (int64_t t = 0; t < L; ++t) {
      const bool real = t < static_cast<int64_t>(r.size());
      ids.Put(b * L + t, real ? r[t] : m.info().pad_token_id);
      mask.Put(b * L + t, real ? 1 : 0);
    }
  }
  StepBinding bind;
  bind.Input(io.input_ids, ids.View(m.cpu_memory(), dims));
  if (!io.attention_mask.empty()) bind.Input(io.attention_mask, mask.View(m.cpu_memory(), dims));
  if (!io.token_type_ids.empty()) bind.Input(io.token_type_ids, types.View(m.cpu_memory(), dims));
  bind.Output(output, Ort::Value{nullptr});  // allocated by ORT
  StepDesc desc;
  desc.kind = StepKind::kEncode;
  m.runner().Run(bind, desc);
  return std::move(bind.outputs()[0]);
}

Pooling ResolvePooling(RunView m, Pooling asked) {
  const EncoderIo& io = m.encoder();
  const EncoderFolderInfo& f = m.config().encoder;
  Pooling p = asked;
  if (p == Pooling::kAuto) {
    if (io.last_hidden_state.empty()) {
      p = Pooling::kModel;  // the graph pools itself and has nothing else to pool
    } else if (!f.pooling.empty()) {
      p = ParsePooling(f.pooling);
    } else if (!f.pooling_unsupported.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  f.pooling_config.string() + ": " + f.pooling_unsupported +
                      " is a pooling ebb cannot follow; set embed.pooling to one of mean, cls, "
                      "last, max, mean_sqrt_len, weightedmean or model");
    } else if (io.pooled == "sentence_embedding") {
      p = Pooling::kModel;
    } else {
      p = Pooling::kMean;
    }
  }
  if (p == Pooling::kModel && io.pooled.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "embed.pooling=model: the graph of '" + m.id() +
                    "' has no pooled output (sentence_embedding or pooler_output); use mean, cls, "
                    "last, max, mean_sqrt_len or weightedmean");
  }
  if (p != Pooling::kModel && io.last_hidden_state.empty()) {
    throw Error(ErrorCode::InvalidArgument, "embed.pooling=" + std::string(PoolingName(p)) +
                                                ": the graph of '" + m.id() +
                                                "' has no last_hidden_state output, only " +
                                                io.pooled + "; use embed.pooling=model");
  }
  return p;
}

// Cuts `full` (special tokens included) to `max_len`, keeping the special tokens that the
// post-processor put around `content` (the same text encoded without them).
std::vector<int32_t> TruncateTokens(const std::vector<int32_t>& full,
                                    const std::vector<int32_t>& content, size_t max_len,
                                    Truncate policy) {
  size_t prefix = 0, suffix = 0;
  if (full.size() >= content.size()) {
    const size_t extra = full.size() - content.size();
    for (size_t p = 0; p <= extra; ++p) {
      if (std::equal(content.begin(), content.end(), full.begin() + p)) {
        prefix = p;
        suffix = extra - p;
        break;
      }
    }
  }
  if (prefix + suffix >= max_len) {  // nothing of the text would fit: plain cut
    prefix = 0;
    suffix = 0;
  }
  const size_t keep = max_len - prefix - suffix;
  const size_t body = full.size() - prefix - suffix;
  std::vector<int32_t> out(full.begin(), full.begin() + prefix);
  const auto body_begin = full.begin() + prefix;
  if (policy == Truncate::kStart) {
    out.insert(out.end(), body_begin + (body - keep), body_begin + body);
  } else {
    out.insert(out.end(), body_begin, body_begin + keep);
  }
  out.insert(out.end(), full.end() - suffix, full.end());
  return out;
}

std::string InputName(bool texts, size_t i) {
  return std::string(texts ? "texts[" : "input_ids[") + std::to_string(i) + "]";
}

// The request's token rows, validated and truncated.
std::vector<std::vector<int32_t>> TokenRows(RunView m, const EmbedRequest& req,
                                            EmbedResult& result) {
  const bool texts = !req.texts.empty();
  const size_t n = texts ? req.texts.size() : req.input_ids.size();
  const size_t max_len = static_cast<size_t>(m.info().context_length);
  const Tokenizer* tok = m.tokenizer();
  if (texts && tok == nullptr) {
    throw Error(ErrorCode::NotFound, m.config().dir.string() +
                                         ": no tokenizer.json; embed texts needs one (or give "
                                         "input_ids)");
  }
  std::vector<std::vector<int32_t>> rows(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> row;
    if (texts) {
      if (req.texts[i].empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    InputName(true, i) + " is empty; every input needs at least one character");
      }
      try {
        row = tok->EncodeRaw(req.texts[i], true);
      } catch (const Error& e) {
        throw Error(e.code(), InputName(true, i) + ": " + e.what());
      }
    } else {
      row = req.input_ids[i];
      if (row.empty()) {
        throw Error(ErrorCode::InvalidArgument, InputName(false, i) + " is empty");
      }
      for (int32_t id : row) {
        if (id < 0 || (m.info().vocab_size > 0 && id >= m.info().vocab_size)) {
          throw Error(ErrorCode::InvalidArgument,
                      InputName(false, i) + ": token id " + std::to_string(id) +
                          " is outside the vocabulary (0 to " +
                          std::to_string(m.info().vocab_size - 1) + ")");
        }
      }
    }
    if (row.size() > max_len) {
      if (req.options.truncate == Truncate::kError) {
        throw Error(ErrorCode::InvalidArgument,
                    InputName(texts, i) + " is " + std::to_string(row.size()) +
                        " tokens, over the model's limit of " + std::to_string(max_len) +
                        " tokens (" + m.config().encoder.max_length_source +
                        "); shorten it or set embed.truncate=end or start");
      }
      std::vector<int32_t> content;
      if (texts) content = tok->EncodeRaw(req.texts[i], false);
      row = TruncateTokens(row, texts ? content : row, max_len, req.options.truncate);
      ++result.num_truncated;
    }
    result.usage.prompt_tokens += row.size();
    rows[i] = std::move(row);
  }
  return rows;
}

void CheckOptions(const EmbedOptions& o) {
  if (o.batch_size < 1) {
    throw Error(ErrorCode::InvalidArgument,
                "embed.batch_size=" + std::to_string(o.batch_size) + " must be at least 1");
  }
  if (o.max_batch_tokens < 1) {
    throw Error(
        ErrorCode::InvalidArgument,
        "embed.max_batch_tokens=" + std::to_string(o.max_batch_tokens) + " must be at least 1");
  }
  if (o.max_padding < 0 || (o.max_padding > 0 && o.max_padding < 1)) {
    throw Error(ErrorCode::InvalidArgument, "embed.max_padding=" + std::to_string(o.max_padding) +
                                                " must be 0 (no limit) or at least 1");
  }
  if (o.dimensions < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "embed.dimensions=" + std::to_string(o.dimensions) + " must be >= 0 (0 = all)");
  }
}

// Pools row b of a [B, L, H] hidden state (or takes row b of [B, H]) into `out` (H floats).
// `len` is the row's real (unpadded) length; padded positions are never read.
void PoolRow(const float* data, const std::vector<int64_t>& shape, int64_t b, size_t len, Pooling p,
             std::vector<float>& out) {
  if (shape.size() == 2) {
    const int64_t H = shape[1];
    out.assign(data + b * H, data + (b + 1) * H);
    return;
  }
  const int64_t L = shape[1], H = shape[2];
  const float* row = data + b * L * H;
  out.assign(H, 0.0f);
  if (p == Pooling::kCls) {
    std::copy(row, row + H, out.begin());
  } else if (p == Pooling::kLast) {
    std::copy(row + (len - 1) * H, row + len * H, out.begin());
  } else if (p == Pooling::kMax) {
    std::copy(row, row + H, out.begin());
    for (size_t t = 1; t < len; ++t) {
      for (int64_t h = 0; h < H; ++h) out[h] = std::max(out[h], row[t * H + h]);
    }
  } else {
    // mean, mean_sqrt_len and weightedmean: a weighted sum in double, then one division.
    const bool weighted = p == Pooling::kWeightedMean;
    std::vector<double> acc(H, 0.0);
    double total_weight = 0;
    for (size_t t = 0; t < len; ++t) {
      const double w = weighted ? static_cast<double>(t + 1) : 1.0;
      total_weight += w;
      for (int64_t h = 0; h < H; ++h) acc[h] += w * row[t * H + h];
    }
    const double divisor =
        p == Pooling::kMeanSqrtLen ? std::sqrt(static_cast<double>(len)) : total_weight;
    for (int64_t h = 0; h < H; ++h) out[h] = static_cast<float>(acc[h] / divisor);
  }
}

void Normalize(std::vector<float>& v) {
  double ss = 0;
  for (float x : v) ss += static_cast<double>(x) * x;
  const double norm = std::sqrt(ss);
  if (norm > 0) {
    for (float& x : v) x = static_cast<float>(x / norm);
  }
}

}  // namespace

std::vector<std::vector<size_t>> PlanEmbedBatches(const std::vector<size_t>& lengths,
                                                  int32_t batch_size, int64_t max_batch_tokens,
                                                  double max_padding) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  for (size_t i = 0; i < order.size();) {
    std::vector<size_t> batch{order[i]};
    uint64_t real = lengths[order[i++]];
    // Sorted ascending: the row being added is the longest of the batch.
    auto fits = [&](size_t len) {
      const int64_t padded = static_cast<int64_t>((batch.size() + 1) * len);
      if (static_cast<int32_t>(batch.size()) >= batch_size || padded > max_batch_tokens) {
        return false;
      }
      return max_padding <= 0 || padded <= kSmallRunTokens ||
             static_cast<double>(padded) <= max_padding * static_cast<double>(real + len);
    };
    while (i < order.size() && fits(lengths[order[i]])) {
      real += lengths[order[i]];
      batch.push_back(order[i++]);
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

void RunEmbedShrinkStep(Model& model) {
  RunView m(model);
  EmbedSlot slot(m);
  const std::vector<int32_t> one{m.info().pad_token_id};
  RunBatch(
      m, {&one},
      m.encoder().last_hidden_state.empty() ? m.encoder().pooled : m.encoder().last_hidden_state);
}

}  // namespace internal

EmbedResult Embed(const std::shared_ptr<Model>& model, const EmbedRequest& req) {
  using namespace internal;
  if (!model) throw Error(ErrorCode::InvalidArgument, "Embed needs a loaded model");
  RunView m(*model);
  if (!m.info().is_encoder) {
    throw Error(ErrorCode::FailedPrecondition,
                "model '" + m.id() + "' (" + m.info().type +
                    ") is a decoder; embeddings need an encoder model (a sentence-transformers "
                    "export or a genai_config.json encoder such as bert); use Generate for text");
  }
  if (req.texts.empty() == req.input_ids.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                req.texts.empty() ? "nothing to embed: give at least one text (or token row)"
                                  : "give texts or input_ids, not both");
  }
  const EmbedOptions& o = req.options;
  CheckOptions(o);
  EmbedSlot slot(m);  // FailedPrecondition after an unload
  EmbedResult result;
  result.max_tokens = m.info().context_length;
  result.pooling = ResolvePooling(m, o.pooling);
  result.normalized = o.normalize.value_or(m.config().encoder.normalize_default);
  if (o.dimensions > 0 && m.encoder().hidden_size > 0 && o.dimensions > m.encoder().hidden_size) {
    throw Error(ErrorCode::InvalidArgument, "embed.dimensions=" + std::to_string(o.dimensions) +
                                                " is larger than the model's " +
                                                std::to_string(m.encoder().hidden_size) +
                                                " dimensions");
  }
  const std::vector<std::vector<int32_t>> rows = TokenRows(m, req, result);
  std::vector<size_t> lengths(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) lengths[i] = rows[i].size();
  const auto batches = PlanEmbedBatches(lengths, o.batch_size, o.max_batch_tokens, o.max_padding);
  const std::string& output =
      result.pooling == Pooling::kModel ? m.encoder().pooled : m.encoder().last_hidden_state;

  // The request: observers see it start and end; the shrink policies count it.
  const uint64_t request_id = NextRequestId();
  const auto t0 = Clock::now();
  m.host().NotifyRequestStart({m.id(), request_id});
  auto end_request = [&](RequestOutcome outcome) {
    RequestEnd e;
    e.model_id = m.id();
    e.request_id = request_id;
    e.outcome = outcome;
    e.prompt_tokens = result.usage.prompt_tokens;
    e.generated_tokens = 0;
    e.ttft_ms = -1;
    e.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    m.Touch();
    m.host().NotifyRequestEnd(e);
    m.shrink().EndRequest();
  };
  try {
    result.embeddings.resize(rows.size());
    std::vector<float> v;
    for (const auto& batch : batches) {
      std::vector<const std::vector<int32_t>*> batch_rows;
      size_t longest = 0;
      for (size_t i : batch) {
        batch_rows.push_back(&rows[i]);
        longest = std::max(longest, rows[i].size());
      }
      result.padded_tokens += batch.size() * longest;
      Ort::Value out = RunBatch(m, batch_rows, output);
      ++result.num_runs;
      const auto shape = out.GetTensorTypeAndShapeInfo().GetShape();
      const bool ok = (shape.size() == 3 && shape[0] == static_cast<int64_t>(batch.size()) &&
                       shape[1] == static_cast<int64_t>(longest)) ||
                      (shape.size() == 2 && shape[0] == static_cast<int64_t>(batch.size()));
      if (!ok || shape.back() <= 0) {
        throw Error(ErrorCode::Internal, m.config().model_path.filename().string() + ": output '" +
                                             output + "' has an unexpected shape for a batch of " +
                                             std::to_string(batch.size()) + " x " +
                                             std::to_string(longest));
      }
      const int64_t H = shape.back();
      if (o.dimensions > H) {
        throw Error(ErrorCode::InvalidArgument, "embed.dimensions=" + std::to_string(o.dimensions) +
                                                    " is larger than the model's " +
                                                    std::to_string(H) + " dimensions");
      }
      const float* data = out.GetTensorData<float>();
      for (size_t k = 0; k < batch.size(); ++k) {
        PoolRow(data, shape, static_cast<int64_t>(k), rows[batch[k]].size(), result.pooling, v);
        if (o.dimensions > 0) v.resize(o.dimensions);
        if (result.normalized) Normalize(v);
        for (float x : v) {
          if (!std::isfinite(x)) {
            throw Error(ErrorCode::Internal,
                        "the model produced a non-finite embedding for input " +
                            std::to_string(batch[k]) + ": its weights or inputs are broken");
          }
        }
        result.embeddings[batch[k]] = v;
      }
      result.dimensions = static_cast<int32_t>(v.size());
    }
  } catch (...) {
    end_request(RequestOutcome::kError);
    throw;
  }
  result.usage.total_tokens = result.usage.prompt_tokens;
  end_request(RequestOutcome::kCompleted);
  return result;
}

}  // namespace ebb
