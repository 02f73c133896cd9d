#include "bench/prompts.h"

#include <algorithm>

#include "core/files.h"
#include "ebb/error.h"
#ifdef EBB_HAVE_TOKENIZER
#include "ebb/tokenizer.h"
#endif

namespace ebb::bench {

PromptKind PromptKindOf(const std::string& scenario) {
  if (scenario == "rag") return PromptKind::kRag;
  if (scenario == "rag-prefix") return PromptKind::kRagPrefix;
  return PromptKind::kFixed;
}

PromptSet::PromptSet(std::vector<int32_t> base, int32_t vocab_size,
                     std::vector<int32_t> special_ids, int32_t max_prompt_tokens,
                     RagPrefixPrompts rag_prefix)
    : base_(std::move(base)),
      vocab_size_(vocab_size),
      special_ids_(std::move(special_ids)),
      max_prompt_tokens_(std::max(1, max_prompt_tokens)),
      rag_prefix_(std::move(rag_prefix)) {
  if (rag_prefix_.prefix.empty()) return;
  // The question keeps at least one token and leaves at least one for the prefix.
  rag_prefix_.question_tokens =
      std::clamp(rag_prefix_.question_tokens, 1, std::max(1, max_prompt_tokens_ - 1));
  const size_t room =
      static_cast<size_t>(std::max(1, max_prompt_tokens_ - rag_prefix_.question_tokens));
  if (rag_prefix_.prefix.size() > room) rag_prefix_.prefix.resize(room);
}

std::vector<int32_t> PromptSet::Synthesize(int32_t n, int32_t vocab_size,
                                           const std::vector<int32_t>& special_ids, int32_t salt) {
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(std::max(0, n)));
  const int64_t vocab = std::max(1, vocab_size);
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = (i * 37 + 11 + salt) % vocab;
    for (int guard = 0; guard < 64 && std::find(special_ids.begin(), special_ids.end(),
                                                static_cast<int32_t>(t)) != special_ids.end();
         ++guard) {
      t = (t + 1) % vocab;
    }
    ids.push_back(static_cast<int32_t>(t));
  }
  return ids;
}

int32_t PromptSet::RagLength(int32_t index) const {
  // A fixed LCG over the index: deterministic across runs and processes.
  uint64_t x = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(index + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  const int32_t len = 64 + static_cast<int32_t>(x % (2048 - 64 + 1));
  return std::min(len, max_prompt_tokens_);
}

std::vector<int32_t> PromptSet::Question(int32_t index) const {
  // 7919 is prime: (index + 1) * 7919 mod vocab differs for every index below vocab_size unless
  // vocab_size is a multiple of 7919.
  const int64_t vocab = std::max(1, vocab_size_);
  const auto salt = static_cast<int32_t>((static_cast<int64_t>(index) + 1) * 7919 % vocab);
  return Synthesize(rag_prefix_.question_tokens, vocab_size_, special_ids_, salt);
}

std::vector<std::vector<int32_t>> PromptSet::Rows(int32_t index, int32_t batch,
                                                  PromptKind kind) const {
  std::vector<int32_t> row = base_;
  if (kind == PromptKind::kRagPrefix) {
    row = rag_prefix_.prefix.empty() ? base_ : rag_prefix_.prefix;
    const std::vector<int32_t> question = Question(index);
    row.insert(row.end(), question.begin(), question.end());
  } else if (kind == PromptKind::kRag) {
    const int32_t n = RagLength(index);
    row.clear();
    row.reserve(static_cast<size_t>(n));
    while (static_cast<int32_t>(row.size()) < n) {
      const size_t take = std::min(base_.size(), static_cast<size_t>(n) - row.size());
      row.insert(row.end(), base_.begin(), base_.begin() + static_cast<std::ptrdiff_t>(take));
    }
  }
  return std::vector<std::vector<int32_t>>(static_cast<size_t>(std::max(1, batch)), row);
}

std::vector<int32_t> TokenizePromptFile(const std::filesystem::path& path,
                                        const std::filesystem::path& model_dir) {
  // A regular file of at most 256 MiB (a FIFO or /dev/zero is refused, not read forever).
  const std::string text = internal::ReadRegularFile(path, 256ull << 20, "--prompt-file");
#ifdef EBB_HAVE_TOKENIZER
  const auto tokenizer = Tokenizer::FromFile(model_dir);
  auto ids = tokenizer->Encode(text, /*add_special_tokens=*/true);
  if (ids.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "--prompt-file '" + path.string() +
                    "' gives no tokens; give a file with some text, or use --prompt-tokens N");
  }
  return ids;
#else
  (void)model_dir;
  throw Error(ErrorCode::FailedPrecondition,
              "--prompt-file needs the tokenizer, which this build of ebb does not include; "
              "use --prompt-tokens N for a synthesized prompt");
#endif
}

}  // namespace ebb::bench
