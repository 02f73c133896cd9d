// The generation loop (ebb/generation.h): input -> ids -> Generator steps -> text, with stop
// strings, max_new_tokens, cancellation and per-row finish reasons.
#include "ebb/generation.h"

#include <algorithm>
#include <new>
#include <span>
#include <string>

#include "ebb/model.h"
#include "ebb/tokenizer.h"

namespace ebb {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the longest suffix of `text` that is a proper prefix of one of `stops`: text that
// may still become a stop string and so must not be emitted yet.
size_t StopHoldback(std::string_view text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& s : stops) {
    for (size_t n = std::min(s.size() - 1, text.size()); n > best; --n) {
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

// The ids after the last one the tokenizer cannot decode: a context StreamDecoder::Prime takes.
std::span<const int32_t> DecodableTail(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  size_t start = ids.size();
  while (start > 0 && !tok.IdToToken(ids[start - 1]).empty()) --start;
  return std::span<const int32_t>(ids).subspan(start);
}

std::vector<std::vector<int32_t>> RequestRows(const Model& model, const GenerateRequest& req) {
  const int n_inputs =
      int{!req.prompt.empty()} + int{!req.messages.empty()} + int{!req.input_ids.empty()};
  if (n_inputs != 1) {
    throw Error(ErrorCode::InvalidArgument,
                n_inputs == 0
                    ? "the request has no input: give a prompt, messages or input_ids (an "
                      "empty prompt is not a request; to start from BOS alone, give its id "
                      "as input_ids)"
                    : "the request has " + std::to_string(n_inputs) +
                          " inputs: give exactly one of prompt, messages or input_ids");
  }
  if (req.input_ids.empty()) {
    const Tokenizer* tok = model.tokenizer();
    if (tok == nullptr) {
      throw Error(ErrorCode::NotFound, (model.info().path / "tokenizer.json").string() +
                                           " not found: a text prompt or messages need the "
                                           "model's tokenizer; give input_ids instead");
    }
    std::vector<int32_t> ids;
    if (!req.prompt.empty()) {
      ids = tok->Encode(req.prompt, /*add_special_tokens=*/true);
    } else {
      // The template writes the special tokens (BOS) itself, as transformers'
      // apply_chat_template(tokenize=True) does.
      const std::string text =
          model.chat_template().Render(req.messages, req.add_generation_prompt);
      ids = tok->Encode(text, /*add_special_tokens=*/false);
    }
    if (ids.empty()) {
      throw Error(ErrorCode::InvalidArgument, "the prompt encodes to no tokens; give some text");
    }
    return {std::move(ids)};
  }
  for (size_t r = 0; r < req.input_ids.size(); ++r) {
    if (req.input_ids[r].empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "input_ids row " + std::to_string(r) + " is empty; every row needs a token");
    }
  }
  return req.input_ids;
}

// The text side of one row: detokenizer, stop-string hold-back, emission.
class RowText {
 public:
  RowText(GenerateRow& row, size_t index, const Tokenizer* tok, const GenerateRequest& req,
          const TextCallback& on_text)
      : row_(row), index_(index), stops_(req.stop), on_text_(on_text) {
    if (tok == nullptr) return;
    decoder_ = std::make_unique<StreamDecoder>(*tok, /*skip_special_tokens=*/true);
    decoder_->Prime(DecodableTail(*tok, row.prompt_ids));
  }

  // Feeds a generated (non-EOS) token. Returns true when a stop string ended the row.
  bool Put(int32_t id) {
    if (!decoder_) return false;
    std::string piece;
    try {
      piece = decoder_->Put(id);
    } catch (const Error&) {
      // Not in the tokenizer's vocabulary: keep what is held, show U+FFFD, go on after it.
      piece = decoder_->Flush();
      piece += kReplacementChar;
      decoder_->Reset();
      ++row_.undecodable_tokens;
    }
    return Take(std::move(piece), /*final=*/false);
  }

  // Ends the row: emits what the decoder and the stop hold-back still hold. Returns true when
  // that text completed a stop string.
  bool Finish() {
    if (!decoder_) return false;
    return Take(decoder_->Flush(), /*final=*/true);
  }

 private:
  bool Take(std::string piece, bool final) {
    held_ += piece;
    if (!stops_.empty()) {
      size_t cut = std::string::npos;
      for (const std::string& s : stops_) cut = std::min(cut, held_.find(s));
      if (cut != std::string::npos) {
        held_.resize(cut);
        Emit(held_);
        held_.clear();
        return true;
      }
    }
    const size_t keep = final ? 0 : StopHoldback(held_, stops_);
    if (held_.size() > keep) {
      Emit(std::string_view(held_).substr(0, held_.size() - keep));
      held_.erase(0, held_.size() - keep);
    }
    return false;
  }

  void Emit(std::string_view text) {
    if (text.empty()) return;
    row_.text += text;
    if (on_text_) on_text_(index_, text);
  }

  GenerateRow& row_;
  size_t index_;
  const std::vector<std::string>& stops_;
  const TextCallback& on_text_;
  std::unique_ptr<StreamDecoder> decoder_;  // null: no tokenizer, ids only
  std::string held_;                        // decoded, not yet emitted (a possible stop start)
};

}  // namespace

std::vector<std::vector<int32_t>> EncodeInput(const Model& model, const GenerateRequest& request) {
  return RequestRows(model, request);
}

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

GenerateResult Generate(const std::shared_ptr<Model>& model, const GenerateRequest& req,
                        const TextCallback& on_text, const TokenCallback& on_token) {
  if (!model) throw Error(ErrorCode::InvalidArgument, "Generate needs a loaded model");
  if (req.max_new_tokens < 0) {
    throw Error(ErrorCode::InvalidArgument, "max_new_tokens=" + std::to_string(req.max_new_tokens) +
                                                " must not be negative (0: until max_length)");
  }
  for (const std::string& s : req.stop) {
    if (s.empty()) throw Error(ErrorCode::InvalidArgument, "a stop string must not be empty");
  }
  std::vector<std::vector<int32_t>> rows = RequestRows(*model, req);
  const size_t n = rows.size();

  GeneratorParams gp = req.params;
  gp.batch_size = static_cast<int32_t>(n);
  auto gen = std::make_unique<Generator>(model, gp);  // throws for bad params / the KV budget
  GenerateResult res;
  res.max_length = gen->max_length();
  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.size());
  if (longest >= static_cast<size_t>(res.max_length)) {
    throw Error(ErrorCode::InvalidArgument,
                "the prompt has " + std::to_string(longest) + " tokens but max_length is " +
                    std::to_string(res.max_length) +
                    ", which leaves no room to generate; shorten the prompt or raise max_length");
  }
  gen->AppendTokens(rows);  // prefill: throws, and nothing is kept

  res.rows.resize(n);
  std::vector<RowText> texts;
  texts.reserve(n);
  for (size_t r = 0; r < n; ++r) {
    res.rows[r].prompt_ids = std::move(rows[r]);
    res.usage.prompt_tokens += res.rows[r].prompt_ids.size();
    texts.emplace_back(res.rows[r], r, model->tokenizer(), req, on_text);
  }
  std::vector<bool> finished(n, false);
  size_t n_unfinished = n;
  auto finish = [&](size_t r, FinishReason why, bool stopped_by_string = false) {
    if (finished[r]) return;
    finished[r] = true;
    --n_unfinished;
    if (!stopped_by_string && texts[r].Finish()) why = FinishReason::kStop;
    res.rows[r].finish_reason = why;
  };
  auto finish_all = [&](FinishReason why) {
    for (size_t r = 0; r < n; ++r) finish(r, why);
  };

  const bool want_logprobs = gp.logprobs || gp.top_logprobs > 0;
  const auto& eos = model->info().eos_token_ids;
  const size_t max_len = static_cast<size_t>(res.max_length);
  while (n_unfinished > 0) {
    if (gen->IsDone()) {
      finish_all(FinishReason::kLength);
      break;
    }
    if (req.cancel.cancelled()) {
      finish_all(FinishReason::kCancelled);
      break;
    }
    try {
      gen->GenerateNextToken();
    } catch (const Error& e) {
      res.error = e;
    } catch (const std::bad_alloc&) {
      res.error = Error(ErrorCode::ResourceExhausted, "out of memory while decoding");
    } catch (const std::exception& e) {
      res.error = Error(ErrorCode::Internal, std::string("decoding failed: ") + e.what());
    }
    if (res.error) {
      finish_all(FinishReason::kError);
      break;
    }
    const std::vector<int32_t> next = gen->GetNextTokens();
    std::vector<TokenLogprobs> next_logprobs;
    if (want_logprobs) next_logprobs = gen->GetNextLogprobs();
    for (size_t r = 0; r < n; ++r) {
      if (finished[r]) continue;
      const int32_t t = next[r];
      GenerateRow& row = res.rows[r];
      row.generated_ids.push_back(t);
      ++res.usage.completion_tokens;
      if (want_logprobs) row.logprobs.push_back(std::move(next_logprobs.at(r)));
      if (on_token) on_token(r, t, want_logprobs ? &row.logprobs.back() : nullptr);
      if (std::find(eos.begin(), eos.end(), t) != eos.end()) {
        finish(r, FinishReason::kStop);
      } else if (texts[r].Put(t)) {
        finish(r, FinishReason::kStop, /*stopped_by_string=*/true);
      } else if ((req.max_new_tokens > 0 &&
                  row.generated_ids.size() >= static_cast<size_t>(req.max_new_tokens)) ||
                 row.prompt_ids.size() + row.generated_ids.size() >= max_len) {
        finish(r, FinishReason::kLength);
      }
    }
  }
  res.stats = gen->Stats();
  gen.reset();  // the KV cache goes back to the pool before Generate returns
  return res;
}

}  // namespace ebb
