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

// Which prompts a scenario feeds: the fixed prompt, rag's varying lengths, or rag-prefix's shared
// prefix followed by a question of its own per iteration.
enum class PromptKind { kFixed, kRag, kRagPrefix };

// The prompts of a scenario name (rag, rag-prefix; anything else: the fixed prompt).
PromptKind PromptKindOf(const std::string& scenario);

// rag-prefix's requests: `prefix` (the same tokens in every request) followed by a question of
// `question_tokens` tokens that differs from every other iteration's from its first token on.
struct RagPrefixPrompts {
  std::vector<int32_t> prefix;  // empty: the scenario is not used
  int32_t question_tokens = 64;
};

class PromptSet {
 public:
  // `base` is the prompt of the fixed-length scenarios (never empty). `vocab_size` and
  // `special_ids` shape synthesized ids (ids in [0, vocab_size) that are not special).
  // `max_prompt_tokens` bounds rag lengths (context_length - gen_tokens, at least 1).
  // `rag_prefix`: rag-prefix's prefix and question length; the prefix is cut to
  // max_prompt_tokens - question_tokens (at least 1 token), the question to max_prompt_tokens - 1.
  PromptSet(std::vector<int32_t> base, int32_t vocab_size, std::vector<int32_t> special_ids,
            int32_t max_prompt_tokens, RagPrefixPrompts rag_prefix = {});

  // Synthesized: `n` ids, (i * 37 + 11 + salt) mod vocab, stepping over special ids.
  static std::vector<int32_t> Synthesize(int32_t n, int32_t vocab_size,
                                         const std::vector<int32_t>& special_ids, int32_t salt = 0);

  // rag's length for iteration `index`: a fixed pseudo-random sequence over 64..2048, clamped to
  // max_prompt_tokens.
  int32_t RagLength(int32_t index) const;

  // rag-prefix's question of iteration `index`: question_tokens synthesized ids whose salt
  // depends on the index, so that no two iterations (below vocab_size of them) share a first
  // token, and so no 16-token block of the prefix cache.
  std::vector<int32_t> Question(int32_t index) const;

  // The prompt rows of request `index` for `batch` sequences. kRag: each iteration has its own
  // length (RagLength), built by repeating the base prompt; kRagPrefix: the prefix, then
  // Question(index); kFixed: the base prompt.
  std::vector<std::vector<int32_t>> Rows(int32_t index, int32_t batch, PromptKind kind) const;

  const std::vector<int32_t>& base() const { return base_; }
  // rag-prefix's prefix after the cut to the context (empty when not used), and question length.
  const std::vector<int32_t>& rag_prefix() const { return rag_prefix_.prefix; }
  int32_t question_tokens() const { return rag_prefix_.question_tokens; }

 private:
  std::vector<int32_t> base_;
  int32_t vocab_size_;
  std::vector<int32_t> special_ids_;
  int32_t max_prompt_tokens_;
  RagPrefixPrompts rag_prefix_;
};

// Tokenizes the text of `path` with the tokenizer in `model_dir`. Throws ebb::Error:
// InvalidArgument naming the file when it cannot be read or is empty after tokenizing,
// FailedPrecondition when this build has no tokenizer.
std::vector<int32_t> TokenizePromptFile(const std::filesystem::path& path,
                                        const std::filesystem::path& model_dir);

}  // namespace ebb::bench
