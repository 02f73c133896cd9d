// The prompts `ebb bench` feeds: synthesized token ids of a requested length, or the tokens of a
// prompt file (through the model's tokenizer, where libebb has one). Deterministic: the same
// options give the same ids in every run and every process, so runs being compared see the same
// input. Immutable after construction; thread-safe to read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ebb::bench {

class PromptSet {
 public:
  // `base` is the prompt of the fixed-length scenarios (never empty). `vocab_size` and
  // `special_ids` shape synthesized ids (ids in [0, vocab_size) that are not special).
  // `max_prompt_tokens` bounds rag lengths (context_length - gen_tokens, at least 1).
  PromptSet(std::vector<int32_t> base, int32_t vocab_size, std::vector<int32_t> special_ids,
            int32_t max_prompt_tokens);

  // Synthesized: `n` ids, (i * 37 + 11 + salt) mod vocab, stepping over special ids.
  static std::vector<int32_t> Synthesize(int32_t n, int32_t vocab_size,
                                         const std::vector<int32_t>& special_ids, int32_t salt = 0);

  // rag's length for iteration `index`: a fixed pseudo-random sequence over 64..2048, clamped to
  // max_prompt_tokens.
  int32_t RagLength(int32_t index) const;

  // The prompt rows of request `index` for `batch` sequences. rag: each iteration has its own
  // length (RagLength), built by repeating the base prompt; other scenarios: the base prompt.
  std::vector<std::vector<int32_t>> Rows(int32_t index, int32_t batch, bool rag) const;

  const std::vector<int32_t>& base() const { return base_; }

 private:
  std::vector<int32_t> base_;
  int32_t vocab_size_;
  std::vector<int32_t> special_ids_;
  int32_t max_prompt_tokens_;
};

// Tokenizes the text of `path` with the tokenizer in `model_dir`. Throws ebb::Error:
// InvalidArgument naming the file when it cannot be read or is empty after tokenizing,
// FailedPrecondition when this build has no tokenizer.
std::vector<int32_t> TokenizePromptFile(const std::filesystem::path& path,
                                        const std::filesystem::path& model_dir);

}  // namespace ebb::bench
