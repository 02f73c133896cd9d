// StreamDecoder: incremental detokenization by re-decoding a small window.
//
// The window holds the tokens of the last emission (as context, so that decoders that treat
// the first token specially — Strip, Metaspace, WordPiece — see the same context as when that
// text was emitted) followed by the tokens not yet emitted. Text is emitted when the window's
// decode extends the context's decode and does not end in U+FFFD (an incomplete character),
// and never while a run of byte-fallback tokens ("<0xE4>"…) may still continue.
#include "ebb/error.h"
#include "ebb/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ebb {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

void StreamDecoder::Reset() {
  window_.clear();
  prefix_count_ = 0;
  prefix_text_.clear();
}

void StreamDecoder::Prime(std::span<const int32_t> context) {
  Reset();
  std::string text = tokenizer_->Decode(context, skip_special_tokens_);  // throws: still reset
  window_.assign(context.begin(), context.end());
  prefix_count_ = window_.size();
  prefix_text_ = std::move(text);
}

std::string StreamDecoder::Put(int32_t id) {
  const Tokenizer::Impl& im = *tokenizer_->impl_;
  if (!im.TokenText(id)) {
    throw Error(ErrorCode::InvalidArgument,
                "token id " + std::to_string(id) + " is not in the vocabulary of " + im.source);
  }
  window_.push_back(id);
  // A run of byte-fallback tokens decodes as a whole: wait for the run to end.
  if (im.StreamHoldsBack(window_, skip_special_tokens_)) return {};
  std::string text = tokenizer_->Decode(window_, skip_special_tokens_);
  if (text.size() <= prefix_text_.size() || text.ends_with(tok::kReplacementUtf8) ||
      !text.starts_with(prefix_text_)) {
    return {};
  }
  std::string out = text.substr(prefix_text_.size());
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(prefix_count_));
  prefix_count_ = window_.size();
  prefix_text_ = tokenizer_->Decode(window_, skip_special_tokens_);
  return out;
}

std::string StreamDecoder::Flush() {
  std::string text = tokenizer_->Decode(window_, skip_special_tokens_);
  std::string out;
  if (text.starts_with(prefix_text_)) {
    out = text.substr(prefix_text_.size());
  } else {
    // The window's text no longer extends what was emitted (a decoder rewrote earlier text);
    // emit the part after the common prefix.
    size_t common = 0;
    while (common < text.size() && common < prefix_text_.size() &&
           text[common] == prefix_text_[common]) {
      ++common;
    }
    while (common > 0 && (static_cast<unsigned char>(text[common]) & 0xC0) == 0x80) --common;
    out = text.substr(common);
  }
  prefix_count_ = window_.size();
  prefix_text_ = std::move(text);
  return out;
}

}  // namespace ebb
