// ebb/embedding.h — embeddings: texts (or token id rows) in, one vector per input out, on an
// encoder model (ModelInfo::is_encoder) under the same memory controls as a decoder.
//
// Embed() tokenizes, truncates to the model's maximum length (or refuses, per `truncate`),
// sorts the inputs into length buckets so that short texts are not padded to the longest, runs
// them through the encoder in batches (at most `batch_size` rows and `max_batch_tokens` padded
// tokens per Run(), and at most `max_padding` x the batch's real tokens), pools each row (mean over
// the attention mask, [CLS], last token, masked max, mean_sqrt_len, weighted mean, or the graph's
// own sentence_embedding), optionally keeps a Matryoshka prefix (`dimensions`) and L2-normalises
// (by default unless the folder's modules.json lists no Normalize module). Results come back in
// input order. Only one batch's activations are alive at a time. docs/embeddings.md describes the
// folder layouts and the options.
//
// One Embed() call is one request: observers see RequestStart/RequestEnd (generated_tokens 0),
// and the model's shrink policies (memory.shrink_every, ShrinkAfterNextRun, ...) count it. No KV
// memory is used.
//
// Ownership: Embed borrows the model (a shared reference is held while it runs); an Unload waits
// for it. Thread-safety: Embed may run concurrently on many threads with one model.
// State after failure: a refused request (bad input, bad option) throws before any Run(); a
// failed Run() throws and ends the request as an error. Either way the model stays usable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/export.h"

namespace ebb {

class Model;

// How the token vectors of a row become one vector.
enum class Pooling {
  kAuto,   // kModel when the graph has no token vectors (last_hidden_state/token_embeddings);
           // else 1_Pooling/config.json when the folder has one; else kModel when the graph
           // has a sentence_embedding output; else kMean
  kMean,   // mean of last_hidden_state over the attention mask ([CLS] and [SEP] included, as
           // sentence-transformers does)
  kCls,    // the first token's vector
  kLast,   // the last real token's vector
  kModel,  // the graph's own pooled output: sentence_embedding, else pooler_output
  // The other sentence-transformers modes (pooling_mode_*_tokens of 1_Pooling/config.json):
  kMax,           // element-wise maximum over the real (unmasked) tokens
  kMeanSqrtLen,   // sum over the real tokens divided by sqrt(number of real tokens)
  kWeightedMean,  // position-weighted mean: token t (1-based) has weight t, so
                  // sum_t t * h_t / sum_t t over the real tokens
};
// "auto", "mean", "cls", "last", "model", "max", "mean_sqrt_len", "weightedmean"
EBB_API std::string_view PoolingName(Pooling pooling);
// Parses a PoolingName; throws ebb::Error(InvalidArgument) otherwise.
EBB_API Pooling ParsePooling(std::string_view name);

// What to do with an input longer than the model's maximum length (EmbedResult::max_tokens).
enum class Truncate {
  kEnd,    // keep the start: drop tokens at the end (special tokens such as [SEP] are kept)
  kStart,  // keep the end: drop tokens at the start (special tokens such as [CLS] are kept)
  kError,  // refuse the request with InvalidArgument naming the input, its length and the limit
};
EBB_API std::string_view TruncateName(Truncate truncate);  // "end", "start", "error"
EBB_API Truncate ParseTruncate(std::string_view name);

// The request keys embed.* of the option table (docs/options.md).
struct EBB_API EmbedOptions {
  Pooling pooling = Pooling::kAuto;  // embed.pooling
  // embed.normalize: L2-normalise each vector. Unset: the model's default, which is on unless
  // the folder has a modules.json that lists no sentence_transformers.models.Normalize module.
  std::optional<bool> normalize;
  Truncate truncate = Truncate::kEnd;  // embed.truncate
  int32_t dimensions = 0;              // embed.dimensions: keep the first N values; 0 = all
  int32_t batch_size = 32;             // embed.batch_size: rows per Run()
  int64_t max_batch_tokens = 8192;     // embed.max_batch_tokens: rows x longest row per Run();
                                       // a row longer than this runs alone
  // embed.max_padding: a row joins a batch only while the batch's padded tokens (rows x longest)
  // stay within max_padding x its real tokens, or within 128 tokens (a Run that small costs
  // about the same whatever its padding). 0 = no limit (batches cut by the two caps above only).
  double max_padding = 1.25;

  // Field by field (a test ties each option-table default to its field's default with it).
  bool operator==(const EmbedOptions&) const = default;
};

struct EBB_API EmbedRequest {
  // The input: exactly one of these, non-empty. Texts are UTF-8 and are encoded with the
  // model's tokenizer.json (special tokens added, e.g. [CLS] ... [SEP]). Token rows are fed as
  // they are (truncation applies to them too).
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> input_ids;
  EmbedOptions options;

  // Sets one embed.* request key (embed.pooling, embed.normalize, embed.truncate,
  // embed.dimensions, embed.batch_size, embed.max_batch_tokens, embed.max_padding). Throws
  // ebb::Error (InvalidArgument) for a bad value, an unknown key (with a suggestion) or a key of
  // another scope or of generation (naming where it belongs).
  void Set(std::string_view key, std::string_view value);
};

struct EmbedUsage {
  uint64_t prompt_tokens = 0;  // tokens fed, all inputs, after truncation (no padding)
  uint64_t total_tokens = 0;   // = prompt_tokens (OpenAI's field)
};

struct EmbedResult {
  std::vector<std::vector<float>> embeddings;  // one per input, in input order
  EmbedUsage usage;
  Pooling pooling = Pooling::kMean;  // the pooling that was applied (kAuto resolved)
  bool normalized = false;           // whether the vectors were L2-normalised
  int32_t dimensions = 0;            // length of each vector
  int32_t max_tokens = 0;            // the model's maximum input length, special tokens included
  int32_t num_truncated = 0;         // inputs that were truncated
  int32_t num_runs = 0;              // encoder Run() calls (batches)
  uint64_t padded_tokens = 0;        // sum over batches of rows x longest row
};

// Embeds `request` on `model`. Throws ebb::Error:
//   FailedPrecondition  the model is not an encoder (ModelInfo::is_encoder), or was unloaded;
//   InvalidArgument     no input or both kinds, an empty text or row, invalid UTF-8 (naming the
//                       input and the byte offset), a token id outside the vocabulary, an input
//                       over the limit with truncate=error, bad options (e.g. dimensions larger
//                       than the model's), pooling=model on a graph without a pooled output;
//   NotFound            texts on a model folder without tokenizer.json;
//   ResourceExhausted / Internal  a failed Run() (the model stays usable).
EBB_API EmbedResult Embed(const std::shared_ptr<Model>& model, const EmbedRequest& request);

}  // namespace ebb
