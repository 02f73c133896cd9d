// ebb/generation.h — the generation loop: a request in, text (streamed) and a result out.
//
// Generate() is what every surface (CLI, service, SDKs) calls to turn a prompt, chat messages
// or token ids into text: it tokenizes, runs a Generator step by step, detokenizes as it goes,
// applies stop sequences and max_new_tokens, watches a CancelToken, and reports why each row
// ended. docs/generation.md describes the contract in prose.
//
// Ownership: Generate borrows the Model (a shared reference is kept while it runs). The
// Generator it creates, and with it the request's KV cache, is destroyed before Generate
// returns or throws, whatever ended the request.
// Thread-safety: Generate may run concurrently on many threads with the same Model (each call
// has its own Generator). A CancelToken may be cancelled from any thread, and from a signal
// handler (Cancel() only stores to a lock-free atomic).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/export.h"
#include "ebb/generator.h"

namespace ebb {

class Model;

// A cancellation flag shared by its copies. Cheap to copy (one shared_ptr). Cancel() is
// thread-safe and async-signal-safe; cancellation cannot be undone.
class EBB_API CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void Cancel() const noexcept { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return flag_->load(std::memory_order_relaxed); }
  // The flag itself, e.g. for a signal handler to store to (it stays valid while any copy of
  // this token lives).
  std::atomic<bool>* flag() const noexcept { return flag_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

struct EBB_API GenerateRequest {
  // The input: exactly one of these.
  std::string prompt;                           // text, encoded with special tokens (BOS)
  std::vector<ChatMessage> messages;            // rendered with the model's chat template
  std::vector<std::vector<int32_t>> input_ids;  // a batch: one row per sequence
  bool add_generation_prompt = true;            // for messages
  // Sampling and KV settings. params.batch_size is ignored: the batch is the number of rows
  // (prompt and messages are a batch of one). params.max_length bounds prompt + generated.
  GeneratorParams params;
  // Generated tokens per row; 0: until max_length. Without a params.max_length it also sizes
  // the KV: max_length becomes the longest prompt + max_new_tokens (at most the context).
  int32_t max_new_tokens = 0;
  // A row ends when its text contains one of these (non-empty) strings; the string and what
  // follows it are not part of the text.
  std::vector<std::string> stop;
  CancelToken cancel;  // checked before each decode step

  // Sets one request key by its option-table name (ebb/options.h, scope request): the loop's
  // own "max_new_tokens" (0 or more), "stop" (adds one non-empty stop string per call) and
  // "add_generation_prompt" (true|false), or a GeneratorParams key (params.Set: "temperature",
  // "max_length", "logprobs", ...). Every surface (CLI, C ABI, Python, HTTP options) sets keys
  // through this, so they take the same names and values. Throws InvalidArgument naming the key
  // and the accepted values.
  void Set(std::string_view key, std::string_view value);
};

enum class FinishReason {
  kStop,       // EOS token or a stop string
  kLength,     // max_length or max_new_tokens
  kCancelled,  // request.cancel
  kError,      // an error while decoding (GenerateResult::error)
};
// "stop", "length", "cancelled", "error" (OpenAI's names, plus the last two).
EBB_API std::string_view FinishReasonName(FinishReason reason);

struct GenerateRow {
  std::string text;                    // generated text (not the prompt), stop string excluded
  std::vector<int32_t> prompt_ids;     // what the model was fed
  std::vector<int32_t> generated_ids;  // every token sampled for this row, EOS included
  // With params.logprobs (or top_logprobs > 0): one entry per generated_ids entry, in order.
  std::vector<TokenLogprobs> logprobs;
  FinishReason finish_reason = FinishReason::kLength;
  // Generated tokens the tokenizer could not decode (a model vocabulary larger than the
  // tokenizer's); each shows as U+FFFD in `text`.
  int32_t undecodable_tokens = 0;
};

struct GenerateUsage {
  uint64_t prompt_tokens = 0;      // all rows
  uint64_t completion_tokens = 0;  // all rows: sum of generated_ids sizes
  uint64_t cached_tokens = 0;      // of prompt_tokens, taken from the prefix cache
};

struct GenerateResult {
  std::vector<GenerateRow> rows;
  GenerateUsage usage;
  GeneratorStats stats;    // of the generator, taken before it was destroyed
  int32_t max_length = 0;  // the max_length the generator resolved
  // What ended a kError request (every unfinished row then has finish_reason kError). The text
  // generated before it is kept in rows[].text.
  std::optional<Error> error;
};

// Called with each new piece of a row's text, in order: complete UTF-8, never a stop string or
// anything after one. Text that could be the start of a stop string is held back until it is
// decided. For each row, concat(pieces) == rows[row].text. Called on Generate's thread; an
// exception it throws propagates out of Generate (the generator is destroyed first).
using TextCallback = std::function<void(size_t row, std::string_view piece)>;

// Called with each token a row samples (EOS included), in order, before any text it completes
// reaches the TextCallback: `logprobs` is the token's entry of GenerateRow::logprobs, or null
// when the request did not ask for logprobs. Lets a streaming caller attach per-token data to
// the text pieces (the service's streamed logprobs). Called on Generate's thread; an exception
// it throws propagates out of Generate (the generator is destroyed first).
using TokenCallback = std::function<void(size_t row, int32_t id, const TokenLogprobs* logprobs)>;

// The token rows Generate would feed for `request`: the prompt encoded with special tokens, the
// messages rendered with the chat template and encoded, or input_ids as given. Lets a caller
// check a prompt against the context before generating (a service answers "too long" with its
// own status). Throws what Generate throws for a bad input (InvalidArgument, NotFound).
EBB_API std::vector<std::vector<int32_t>> EncodeInput(const Model& model,
                                                      const GenerateRequest& request);

// One piece of a Generation (Generation::Next): what one row got from one decode step.
struct GenerationPiece {
  size_t row = 0;
  // The token the row sampled (EOS included), or -1 for a piece that only ends the row (the
  // generation reached max_length, was cancelled or failed) and releases the text it held.
  int32_t token = -1;
  // The token's entry of GenerateRow::logprobs when the request asked for logprobs, else null.
  // Borrowed from the Generation: valid until its next Next() or Finish().
  const TokenLogprobs* logprobs = nullptr;
  // The text this piece releases: complete UTF-8, never a stop string or anything after one;
  // often empty (a token in the middle of a character, or text held back as the possible start
  // of a stop string). For each row, concat(text) over its pieces == rows[row].text.
  std::string text;
  // Set on the row's last piece: why the row ended.
  std::optional<FinishReason> finish_reason;
};

// A generation in pull form: Start validates the request, reserves its KV and runs the prompt
// (prefill), failing before anything is committed; Next yields one piece at a time, running a
// decode step when it has none queued; Finish gives the result. Generate() is a loop over it.
// A service calls Start before it answers, so a request that cannot start gets its own error
// status rather than an error event inside a 200 stream; an SDK iterates it without a thread.
//
// Ownership: a Generation keeps a shared reference to its Model and owns the request's
// Generator and KV cache. The KV goes back to the pool as soon as the last row ends (before
// Next hands out the pieces of that last step), at Finish, or when the Generation is
// destroyed, whichever comes first. Movable, not copyable; a moved-from Generation is done()
// and its other calls throw FailedPrecondition.
// Thread-safety: one thread at a time (calls are not synchronised); request.cancel may be
// cancelled from any thread and is checked before each decode step.
class EBB_API Generation {
 public:
  // Throws what Generate throws before the first token (see Generate), with nothing held.
  static Generation Start(std::shared_ptr<Model> model, GenerateRequest request);

  Generation(Generation&&) noexcept;
  Generation& operator=(Generation&&) noexcept;
  ~Generation();

  // The next piece, in order (rows of one step in row order); nullopt once every row has ended.
  // Decoding errors do not throw: the rows end with FinishReason::kError (Finish().error says
  // why). Throws FailedPrecondition after Finish.
  std::optional<GenerationPiece> Next();

  // True once every row has ended (Next then returns nullopt).
  bool done() const noexcept;

  // Ends the generation and returns what it generated. Rows that had not ended (the caller
  // stopped before Next returned nullopt) end with FinishReason::kCancelled and keep their
  // text so far (held text is not released). The KV is freed before this returns. Call once;
  // a second call throws FailedPrecondition.
  GenerateResult Finish();

  // The token rows the model is fed (EncodeInput's), and the generator's resolved max_length.
  const std::vector<int32_t>& prompt_ids(size_t row) const;
  int32_t max_length() const noexcept;

 private:
  struct Impl;
  explicit Generation(std::unique_ptr<Impl> impl);
  Impl& live() const;  // throws FailedPrecondition on a moved-from Generation
  std::unique_ptr<Impl> impl_;
};

// Runs `request` on `model` to the end (EOS, a stop string, max_new_tokens, max_length, cancel
// or a decoding error) and returns what was generated.
//
// Throws ebb::Error, before anything is generated and with nothing held afterwards, for a bad
// request: InvalidArgument for none or several inputs, an empty prompt or row, a prompt longer
// than max_length, bad params, a negative max_new_tokens or an empty stop string; NotFound when
// a prompt or messages need a tokenizer the model folder lacks; InvalidArgument when messages
// need a chat template the model has none of (Model::chat_template); and whatever
// creating the generator or running the prompt (prefill) throws (e.g. ResourceExhausted from
// the KV budget). After the first token, errors do not throw: the request ends with
// FinishReason::kError, `error` set and the text so far kept. Without a tokenizer (input_ids
// on a folder with no tokenizer.json) rows have ids but no text and on_text is not called.
// Generate is Generation::Start, Next until nullopt (each piece's token to on_token, its text
// to on_text), then Finish.
EBB_API GenerateResult Generate(const std::shared_ptr<Model>& model, const GenerateRequest& request,
                                const TextCallback& on_text = {},
                                const TokenCallback& on_token = {});

}  // namespace ebb
