// The generation loop (ebb/generation.h): input -> ids -> Generator steps -> text, with stop
// strings, max_new_tokens, cancellation and per-row finish reasons.
#include "ebb/generation.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <new>
#include <span>
#include <string>

#include "core/option_parse.h"
#include "ebb/model.h"
#include "ebb/options.h"
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

// The text side of one row: detokenizer, stop-string hold-back, release. Text it releases is
// appended to the row's text and to `out` (the caller's piece).
class RowText {
 public:
  RowText(GenerateRow& row, const Tokenizer* tok, const std::vector<std::string>& stops)
      : row_(&row), stops_(&stops) {
    if (tok == nullptr) return;
    decoder_ = std::make_unique<StreamDecoder>(*tok, /*skip_special_tokens=*/true);
    decoder_->Prime(DecodableTail(*tok, row.prompt_ids));
  }

  // Feeds a generated (non-EOS) token. Returns true when a stop string ended the row.
  bool Put(int32_t id, std::string& out) {
    if (!decoder_) return false;
    std::string piece;
    try {
      piece = decoder_->Put(id);
    } catch (const Error&) {
      // Not in the tokenizer's vocabulary: keep what is held, show U+FFFD, go on after it.
      piece = decoder_->Flush();
      piece += kReplacementChar;
      decoder_->Reset();
      ++row_->undecodable_tokens;
    }
    return Take(std::move(piece), /*final=*/false, out);
  }

  // Ends the row: releases what the decoder and the stop hold-back still hold. Returns true
  // when that text completed a stop string.
  bool Finish(std::string& out) {
    if (!decoder_) return false;
    return Take(decoder_->Flush(), /*final=*/true, out);
  }

 private:
  bool Take(std::string piece, bool final, std::string& out) {
    held_ += piece;
    if (!stops_->empty()) {
      size_t cut = std::string::npos;
      for (const std::string& s : *stops_) cut = std::min(cut, held_.find(s));
      if (cut != std::string::npos) {
        held_.resize(cut);
        Release(held_, out);
        held_.clear();
        return true;
      }
    }
    const size_t keep = final ? 0 : StopHoldback(held_, *stops_);
    if (held_.size() > keep) {
      Release(std::string_view(held_).substr(0, held_.size() - keep), out);
      held_.erase(0, held_.size() - keep);
    }
    return false;
  }

  void Release(std::string_view text, std::string& out) {
    row_->text += text;
    out += text;
  }

  GenerateRow* row_;                        // in the Generation's result; outlives this
  const std::vector<std::string>* stops_;   // the Generation's request
  std::unique_ptr<StreamDecoder> decoder_;  // null: no tokenizer, ids only
  std::string held_;                        // decoded, not yet released (a possible stop start)
};

void CheckRequest(const GenerateRequest& req) {
  if (req.max_new_tokens < 0) {
    throw Error(ErrorCode::InvalidArgument, "max_new_tokens=" + std::to_string(req.max_new_tokens) +
                                                " must not be negative (0: until max_length)");
  }
  for (const std::string& s : req.stop) {
    if (s.empty()) throw Error(ErrorCode::InvalidArgument, "a stop string must not be empty");
  }
}

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

void GenerateRequest::Set(std::string_view key, std::string_view value) {
  const OptionSpec* spec = FindOption(key);
  if (key == "max_new_tokens") {
    internal::ValidateOptionValue(*spec, value);
    max_new_tokens = static_cast<int32_t>(internal::ParseInt(key, value, 0, INT32_MAX));
  } else if (key == "stop") {
    if (value.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "stop: an empty string would end every row at once; give a non-empty string");
    }
    stop.emplace_back(value);
  } else if (key == "add_generation_prompt") {
    internal::ValidateOptionValue(*spec, value);
    add_generation_prompt = internal::ParseBool(key, value);
  } else {
    params.Set(key, value);  // unknown keys and wrong scopes are named there
  }
}

struct Generation::Impl {
  std::shared_ptr<Model> model;
  GenerateRequest req;
  std::unique_ptr<Generator> gen;  // null once every row ended (KV freed) or after Finish
  GenerateResult res;
  std::vector<RowText> texts;
  std::vector<bool> finished;
  size_t n_unfinished = 0;
  bool want_logprobs = false;
  bool finished_called = false;
  std::deque<GenerationPiece> queued;  // pieces of the last step not yet handed out

  // Ends row r (its held text released into `piece`); `why` becomes kStop when that text
  // completes a stop string.
  void EndRow(size_t r, FinishReason why, GenerationPiece& piece, bool stopped_by_string) {
    finished[r] = true;
    --n_unfinished;
    if (!stopped_by_string && texts[r].Finish(piece.text)) why = FinishReason::kStop;
    res.rows[r].finish_reason = why;
    piece.finish_reason = why;
  }

  // Ends every unfinished row with `why`, one token-less piece each.
  void EndAll(FinishReason why) {
    for (size_t r = 0; r < finished.size(); ++r) {
      if (finished[r]) continue;
      GenerationPiece piece;
      piece.row = r;
      EndRow(r, why, piece, /*stopped_by_string=*/false);
      queued.push_back(std::move(piece));
    }
  }

  // The generator's stats, then the generator and its KV cache, gone.
  void ReleaseGenerator() {
    if (!gen) return;
    res.stats = gen->Stats();
    gen.reset();
  }

  // One decode step for every unfinished row (or the end of them all), its pieces queued.
  void Step() {
    if (gen->done()) return EndAll(FinishReason::kLength);
    if (req.cancel.cancelled()) return EndAll(FinishReason::kCancelled);
    try {
      gen->GenerateNextToken();
    } catch (const Error& e) {
      res.error = e;
    } catch (const std::bad_alloc&) {
      res.error = Error(ErrorCode::ResourceExhausted, "out of memory while decoding");
    } catch (const std::exception& e) {
      res.error = Error(ErrorCode::Internal, std::string("decoding failed: ") + e.what());
    }
    if (res.error) return EndAll(FinishReason::kError);
    const std::vector<int32_t> next = gen->GetNextTokens();
    std::vector<TokenLogprobs> next_logprobs;
    if (want_logprobs) next_logprobs = gen->GetNextLogprobs();
    const auto& eos = model->info().eos_token_ids;
    const size_t max_len = static_cast<size_t>(res.max_length);
    for (size_t r = 0; r < finished.size(); ++r) {
      if (finished[r]) continue;
      const int32_t t = next[r];
      GenerateRow& row = res.rows[r];
      GenerationPiece piece;
      piece.row = r;
      piece.token = t;
      row.generated_ids.push_back(t);
      ++res.usage.completion_tokens;
      if (want_logprobs) {
        row.logprobs.push_back(std::move(next_logprobs.at(r)));
        piece.logprobs = &row.logprobs.back();
      }
      if (std::find(eos.begin(), eos.end(), t) != eos.end()) {
        EndRow(r, FinishReason::kStop, piece, false);
      } else if (texts[r].Put(t, piece.text)) {
        EndRow(r, FinishReason::kStop, piece, /*stopped_by_string=*/true);
      } else if ((req.max_new_tokens > 0 &&
                  row.generated_ids.size() >= static_cast<size_t>(req.max_new_tokens)) ||
                 row.prompt_ids.size() + row.generated_ids.size() >= max_len) {
        EndRow(r, FinishReason::kLength, piece, false);
      }
      queued.push_back(std::move(piece));
    }
  }
};

Generation::Generation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generation::Generation(Generation&&) noexcept = default;
Generation& Generation::operator=(Generation&&) noexcept = default;
Generation::~Generation() = default;

Generation Generation::Start(std::shared_ptr<Model> model, GenerateRequest req) {
  if (!model) throw Error(ErrorCode::InvalidArgument, "Generate needs a loaded model");
  CheckRequest(req);
  std::vector<std::vector<int32_t>> rows = RequestRows(*model, req);
  const size_t n = rows.size();

  auto g = std::make_unique<Impl>();
  GeneratorParams gp = req.params;
  gp.batch_size = static_cast<int32_t>(n);
  // max_new_tokens without a max_length bounds the KV to prompt + new tokens, on every surface
  // (the service did, the CLI and SDKs reserved the config's max_length: 3 GiB of static KV for
  // a 6-token request on the phi shape). The generator clamps it to the context length.
  if (req.max_new_tokens > 0 && gp.max_length == 0) {
    size_t prompt = 0;
    for (const auto& r : rows) prompt = std::max(prompt, r.size());
    gp.max_length = static_cast<int32_t>(
        std::min<size_t>(prompt + static_cast<size_t>(req.max_new_tokens), INT32_MAX));
  }
  g->gen = std::make_unique<Generator>(model, gp);  // throws for bad params / the KV budget
  g->res.max_length = g->gen->max_length();
  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.size());
  if (longest >= static_cast<size_t>(g->res.max_length)) {
    throw Error(ErrorCode::InvalidArgument,
                "the prompt has " + std::to_string(longest) + " tokens but max_length is " +
                    std::to_string(g->res.max_length) +
                    ", which leaves no room to generate; shorten the prompt or raise max_length");
  }
  g->gen->AppendTokens(rows);  // prefill: throws, and nothing is kept

  g->model = std::move(model);
  g->req = std::move(req);
  g->want_logprobs = gp.logprobs || gp.top_logprobs > 0;
  g->res.rows.resize(n);
  g->texts.reserve(n);
  for (size_t r = 0; r < n; ++r) {
    g->res.rows[r].prompt_ids = std::move(rows[r]);
    g->res.usage.prompt_tokens += g->res.rows[r].prompt_ids.size();
    g->texts.emplace_back(g->res.rows[r], g->model->tokenizer(), g->req.stop);
  }
  g->res.usage.cached_tokens = g->gen->Stats().cached_tokens;
  g->finished.assign(n, false);
  g->n_unfinished = n;
  return Generation(std::move(g));
}

Generation::Impl& Generation::live() const {
  if (!impl_) {
    throw Error(ErrorCode::FailedPrecondition,
                "this Generation was moved from; use the one it was moved to");
  }
  return *impl_;
}

std::optional<GenerationPiece> Generation::Next() {
  Impl& g = live();
  if (g.finished_called) {
    throw Error(ErrorCode::FailedPrecondition, "Generation::Next after Finish: start a new one");
  }
  while (g.queued.empty() && g.n_unfinished > 0) g.Step();
  if (g.n_unfinished == 0) g.ReleaseGenerator();  // the KV goes back before the last pieces
  if (g.queued.empty()) return std::nullopt;
  GenerationPiece piece = std::move(g.queued.front());
  g.queued.pop_front();
  return piece;
}

bool Generation::done() const noexcept {
  return !impl_ || (impl_->n_unfinished == 0 && impl_->queued.empty());
}

GenerateResult Generation::Finish() {
  Impl& g = live();
  if (g.finished_called) {
    throw Error(ErrorCode::FailedPrecondition, "Generation::Finish called twice");
  }
  g.finished_called = true;
  for (size_t r = 0; r < g.finished.size(); ++r) {
    if (g.finished[r]) continue;
    g.finished[r] = true;  // stopped by the caller: its held text is not released
    g.res.rows[r].finish_reason = FinishReason::kCancelled;
  }
  g.n_unfinished = 0;
  g.queued.clear();
  g.ReleaseGenerator();
  return std::move(g.res);
}

const std::vector<int32_t>& Generation::prompt_ids(size_t row) const {
  return live().res.rows.at(row).prompt_ids;
}

int32_t Generation::max_length() const noexcept { return impl_ ? impl_->res.max_length : 0; }

GenerateResult Generate(const std::shared_ptr<Model>& model, const GenerateRequest& req,
                        const TextCallback& on_text, const TokenCallback& on_token) {
  Generation g = Generation::Start(model, req);
  while (std::optional<GenerationPiece> p = g.Next()) {
    if (on_token && p->token >= 0) on_token(p->row, p->token, p->logprobs);
    if (on_text && !p->text.empty()) on_text(p->row, p->text);
  }
  return g.Finish();  // the generator is gone already (or goes with `g` on a throw)
}

}  // namespace ebb
