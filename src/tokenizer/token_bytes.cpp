#include "tokenizer/token_bytes.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer_impl.h"

namespace ebb::internal {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

TokenBytes ComputeTokenBytes(const Tokenizer& tokenizer) {
  TokenBytes out;
  const size_t n = tokenizer.vocab_size();
  out.bytes.resize(n);
  out.special.assign(n, false);
  // The context: a token that decodes to plain text, so the next token decodes mid-text.
  std::vector<int32_t> ctx = tokenizer.Encode("a", false);
  if (ctx.size() != 1) ctx.clear();
  const std::string ctx_text = ctx.empty() ? std::string() : tokenizer.Decode(ctx);
  std::vector<int32_t> pair = ctx;
  pair.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string text = tokenizer.IdToToken(id);
    if (text.empty()) continue;
    if (tokenizer.IsSpecial(id)) {
      out.special[i] = true;
      out.bytes[i] = text;
      continue;
    }
    const int byte = tok::ParseByteFallbackToken(text);
    if (byte >= 0) {
      out.bytes[i] = std::string(1, static_cast<char>(byte));
      continue;
    }
    pair.back() = id;
    std::string decoded = tokenizer.Decode(pair);
    if (decoded.compare(0, ctx_text.size(), ctx_text) == 0) {
      decoded.erase(0, ctx_text.size());
    } else {
      decoded = tokenizer.Decode(std::span<const int32_t>(&pair.back(), 1));
    }
    if (decoded.find(kReplacement) != std::string::npos &&
        text.find(kReplacement) == std::string::npos) {
      std::string raw;
      if (tok::AppendBytesFromByteLevel(raw, text)) decoded = std::move(raw);
    }
    out.bytes[i] = std::move(decoded);
  }
  return out;
}

}  // namespace ebb::internal
