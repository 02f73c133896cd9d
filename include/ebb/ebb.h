/* ebb/ebb.h — the C ABI of libebb (C11; no C++ here). docs/c_api.md describes it by example.
 *
 * Style (LevelDB's c.h, onnxruntime-genai's ort_genai_c.h):
 *  - Opaque handles: ebb_runtime, ebb_model, ebb_generator (token level), ebb_request and
 *    ebb_result (text level: the library's generation loop), and option objects.
 *  - Every fallible call returns an ebb_error* (NULL on success). The caller owns a returned
 *    error and frees it with ebb_error_free. Codes match ebb::ErrorCode (ebb/error.h). No C++
 *    exception ever crosses this boundary (std::bad_alloc included: it becomes
 *    EBB_RESOURCE_EXHAUSTED).
 *  - Options are string key/value pairs, the keys of docs/options.md, checked when set.
 *  - Out-parameters are written only on success. A function that creates an object gives the
 *    caller ownership; free it with the matching *_free (each *_free accepts NULL).
 *  - Strings are UTF-8 and NUL-terminated. Strings returned through `char**` are owned by the
 *    caller (ebb_string_free); `const char*` returns are borrowed and say how long they live.
 *  - Thread-safety: as in the C++ API. Runtime, model and runtime-handle calls may be made from
 *    any thread. A generator, a request, a result and the option objects are used by one thread
 *    at a time, except ebb_request_cancel, which may be called from any thread (and from a
 *    signal handler) while ebb_generate runs.
 *  - State after failure: a failed call leaves its objects as they were (see the ebb/ headers).
 */
#ifndef EBB_EBB_H_
#define EBB_EBB_H_

#include <stddef.h>
#include <stdint.h>

#include "ebb/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function's signature or meaning changes incompatibly. */
#define EBB_C_ABI_VERSION 1

/* ---- Version -------------------------------------------------------------------------------- */
/* ebb's version, e.g. "0.1.0". Static storage; never free. */
EBB_API const char* ebb_version(void);
/* The EBB_C_ABI_VERSION the library was built with. */
EBB_API int ebb_c_abi_version(void);

/* ---- Errors --------------------------------------------------------------------------------- */
typedef enum ebb_error_code {
  EBB_OK = 0,
  EBB_INVALID_ARGUMENT = 1,
  EBB_NOT_FOUND = 2,
  EBB_RESOURCE_EXHAUSTED = 3,
  EBB_FAILED_PRECONDITION = 4,
  EBB_CANCELLED = 5,
  EBB_DEADLINE_EXCEEDED = 6,
  EBB_UNAVAILABLE = 7,
  EBB_INTERNAL = 8
} ebb_error_code;

typedef struct ebb_error ebb_error;

/* The code of `error` (EBB_OK for NULL). */
EBB_API ebb_error_code ebb_error_get_code(const ebb_error* error);
/* ebb's message; borrowed, valid until ebb_error_free ("" for NULL). */
EBB_API const char* ebb_error_get_message(const ebb_error* error);
/* "invalid_argument", "resource_exhausted", ... ("ok" for EBB_OK). Static storage. */
EBB_API const char* ebb_error_code_name(ebb_error_code code);
EBB_API void ebb_error_free(ebb_error* error);

/* Frees a string that ebb returned through a `char**` out-parameter. */
EBB_API void ebb_string_free(char* str);

/* ---- Runtime -------------------------------------------------------------------------------- */
typedef struct ebb_runtime_options ebb_runtime_options;
typedef struct ebb_runtime ebb_runtime;
typedef struct ebb_model_options ebb_model_options;
typedef struct ebb_model ebb_model;

EBB_API ebb_error* ebb_runtime_options_create(ebb_runtime_options** out);
/* A runtime key: "memory.limit", "arena.max_mem", "arena_extend_strategy", ... */
EBB_API ebb_error* ebb_runtime_options_set(ebb_runtime_options* options, const char* key,
                                           const char* value);
EBB_API void ebb_runtime_options_free(ebb_runtime_options* options);

/* options may be NULL (defaults). The runtime is independent of `options` afterwards. */
EBB_API ebb_error* ebb_runtime_create(const ebb_runtime_options* options, ebb_runtime** out);
/* Unloads the runtime's models, then frees; never waits on generators the caller holds: calls
 * running on other threads finish, idle generators are detached (their next call fails with
 * EBB_FAILED_PRECONDITION; the model's memory is freed when the last is freed). Model handles
 * still held stay valid but unloaded. */
EBB_API void ebb_runtime_free(ebb_runtime* runtime);

EBB_API ebb_error* ebb_model_options_create(ebb_model_options** out);
/* A load key: "session_options.<k>", "provider_options.<ep>.<k>", "run_options.<k>" or one of
 * ebb's model keys ("kv_cache.max_bytes", "memory.shrink_every", ...). */
EBB_API ebb_error* ebb_model_options_set(ebb_model_options* options, const char* key,
                                         const char* value);
EBB_API void ebb_model_options_free(ebb_model_options* options);

/* Loads the model folder `path` under `id` (options may be NULL). *out is a new reference to
 * the model (ebb_model_free), valid even after the model is unloaded. */
EBB_API ebb_error* ebb_runtime_load(ebb_runtime* runtime, const char* id, const char* path,
                                    const ebb_model_options* options, ebb_model** out);
/* A new reference to the model under `id` (EBB_NOT_FOUND when none). */
EBB_API ebb_error* ebb_runtime_get(ebb_runtime* runtime, const char* id, ebb_model** out);
/* Runtime::Unload: force=0 refuses while generators are alive; force!=0 waits for generations
 * running on other threads and detaches idle generators (Runtime::Unload in runtime.h). */
EBB_API ebb_error* ebb_runtime_unload(ebb_runtime* runtime, const char* id, int force);
/* Runtime::List() as a JSON array of objects (caller frees with ebb_string_free). */
EBB_API ebb_error* ebb_runtime_list_json(const ebb_runtime* runtime, char** out_json);
/* Runtime::Stats() as JSON (ebb::ToJson). */
EBB_API ebb_error* ebb_runtime_stats_json(const ebb_runtime* runtime, char** out_json);
EBB_API ebb_error* ebb_runtime_set_memory_limit(ebb_runtime* runtime, uint64_t bytes);

/* ---- Model ---------------------------------------------------------------------------------- */
/* Drops this reference (does not unload: see ebb_runtime_unload). */
EBB_API void ebb_model_free(ebb_model* model);
/* The model's id; borrowed, valid while `model` lives. */
EBB_API const char* ebb_model_id(const ebb_model* model);
/* ModelInfo as JSON. */
EBB_API ebb_error* ebb_model_info_json(const ebb_model* model, char** out_json);
/* Encodes with the folder's tokenizer (EBB_NOT_FOUND without one). *out_ids is freed with
 * ebb_ids_free. */
EBB_API ebb_error* ebb_model_encode(const ebb_model* model, const char* text,
                                    int add_special_tokens, int32_t** out_ids, size_t* out_count);
EBB_API ebb_error* ebb_model_decode(const ebb_model* model, const int32_t* ids, size_t count,
                                    int skip_special_tokens, char** out_text);
EBB_API void ebb_ids_free(int32_t* ids);

/* ---- Tier 2 controls (the model's ModelControls, ebb/model_controls.h) ----------------------- */
/* Any thread, while generations run. */
EBB_API ebb_error* ebb_model_shrink_arena(ebb_model* model);
EBB_API ebb_error* ebb_model_shrink_after_next_run(ebb_model* model);
EBB_API ebb_error* ebb_model_shrink_every(ebb_model* model, uint32_t n);         /* 0: off */
EBB_API ebb_error* ebb_model_shrink_above(ebb_model* model, uint64_t rss_bytes); /* 0: off */
/* Hands back the resident pages of file-backed weights (ModelControls::ReleaseWeights); writes
 * {"released", "reason", "resident_before_bytes", "resident_after_bytes"} (free with
 * ebb_string_free). Not an error when nothing can be released: "released" is false and
 * "reason" says why. */
EBB_API ebb_error* ebb_model_release_weights(ebb_model* model, char** out_json);
/* The prefix cache (ModelControls::PinPrefix; docs/memory.md "Prefix cache"). Pins the whole
 * 16-token blocks of ids[0, n) (prefilled now where not cached yet) until unpinned, and writes
 * {"tokens", "pinned_tokens", "pinned_bytes", "pinned"} (free with ebb_string_free).
 * EBB_FAILED_PRECONDITION when prefix_cache.max_bytes is 0 (set it at load or with
 * ebb_model_set_run_option(model, "prefix_cache.max_bytes", "64MiB")) or for an encoder;
 * EBB_INVALID_ARGUMENT for fewer than 16 ids or an id outside the vocabulary;
 * EBB_RESOURCE_EXHAUSTED when the blocks do not fit (nothing is pinned then). */
EBB_API ebb_error* ebb_model_pin_prefix(ebb_model* model, const int32_t* ids, size_t n,
                                        char** out_json);
/* Unpins ids[0, n) as pinned by ebb_model_pin_prefix (the same ids); writes the same JSON, with
 * "pinned" true when they were pinned (and now are not), false when they were not: not an
 * error. */
EBB_API ebb_error* ebb_model_unpin_prefix(ebb_model* model, const int32_t* ids, size_t n,
                                          char** out_json);
/* Drops every unpinned block of the model's prefix cache now; writes the bytes freed to
 * *freed_bytes (which may be NULL). */
EBB_API ebb_error* ebb_model_drop_prefix_cache(ebb_model* model, uint64_t* freed_bytes);
/* A run option for every later Run() (ModelControls::SetRunOption: the same checks and warnings
 * as at load). Clearing restores the key's load-time value, or unsets a key that had none. */
EBB_API ebb_error* ebb_model_set_run_option(ebb_model* model, const char* key, const char* value);
EBB_API ebb_error* ebb_model_clear_run_option(ebb_model* model, const char* key);
/* The run options in force, as a JSON object. */
EBB_API ebb_error* ebb_model_run_options_json(const ebb_model* model, char** out_json);
/* The model's MemoryStats as JSON (ebb::ToJson: process, kv, cpu_arena, num_shrinks, ...). */
EBB_API ebb_error* ebb_model_stats_json(const ebb_model* model, char** out_json);

/* ---- Generator (token level) ---------------------------------------------------------------- */
typedef struct ebb_generator_params ebb_generator_params;
typedef struct ebb_generator ebb_generator;

EBB_API ebb_error* ebb_generator_params_create(ebb_generator_params** out);
/* A request key: "max_length", "temperature", "top_k", "do_sample", "kv_cache.mode", ... */
EBB_API ebb_error* ebb_generator_params_set(ebb_generator_params* params, const char* key,
                                            const char* value);
EBB_API void ebb_generator_params_free(ebb_generator_params* params);

/* params may be NULL (defaults). The generator holds a reference to the model and its KV cache
 * (returned by ebb_generator_free). EBB_RESOURCE_EXHAUSTED when the KV budget refuses it. */
EBB_API ebb_error* ebb_generator_create(ebb_model* model, const ebb_generator_params* params,
                                        ebb_generator** out);
EBB_API void ebb_generator_free(ebb_generator* generator);
EBB_API ebb_error* ebb_generator_append_tokens(ebb_generator* generator, const int32_t* ids,
                                               size_t count);
EBB_API ebb_error* ebb_generator_generate_next_token(ebb_generator* generator);
/* 1 when done (EOS or max_length), else 0. */
EBB_API int ebb_generator_is_done(const ebb_generator* generator);
/* The sequence (prompt + generated); borrowed, valid until the next call that changes the
 * generator. */
EBB_API ebb_error* ebb_generator_get_sequence(const ebb_generator* generator,
                                              const int32_t** out_ids, size_t* out_count);
/* Logits of the last position, float32 [vocab_size]; borrowed like the sequence. */
EBB_API ebb_error* ebb_generator_get_logits(const ebb_generator* generator,
                                            const float** out_logits, size_t* out_count);
EBB_API ebb_error* ebb_generator_rewind_to(ebb_generator* generator, size_t length);

/* ---- Request (text level: ebb::Generate) ----------------------------------------------------- */
typedef struct ebb_request ebb_request;
typedef struct ebb_result ebb_result;

EBB_API ebb_error* ebb_request_create(ebb_request** out);
EBB_API void ebb_request_free(ebb_request* request);
/* The input: exactly one of a prompt, messages or input ids (ebb_generate checks). */
EBB_API ebb_error* ebb_request_set_prompt(ebb_request* request, const char* prompt);
EBB_API ebb_error* ebb_request_add_message(ebb_request* request, const char* role,
                                           const char* content);
EBB_API ebb_error* ebb_request_set_input_ids(ebb_request* request, const int32_t* ids,
                                             size_t count);
/* A request key (GeneratorParams::Set: "temperature", "presence_penalty", "frequency_penalty",
 * "logit_bias" ("ID=BIAS,..." or a JSON object), "logprobs", "top_logprobs", structured output's
 * "json_schema" (a JSON Schema's text), "regex" and "grammar" (GBNF), ...), or one of the loop's
 * own: "max_new_tokens", "stop" (adds one stop string per call), "add_generation_prompt"
 * (true|false). A constraint that does not compile fails ebb_generate before any token, naming
 * the keyword (docs/structured_output.md). */
EBB_API ebb_error* ebb_request_set_option(ebb_request* request, const char* key, const char* value);
/* Cancels the request: ebb_generate ends before its next decode step with finish reason
 * "cancelled", freeing its KV. Any thread; async-signal-safe; cannot be undone. */
EBB_API void ebb_request_cancel(ebb_request* request);

/* Called with each new piece of text (complete UTF-8, `len` bytes, NUL-terminated) on the
 * thread of ebb_generate. Return 0 to go on, non-zero to cancel the request. */
typedef int (*ebb_text_callback)(void* user_data, const char* piece, size_t len);

/* Runs the request to its end. Errors before the first token (bad request, KV budget) return an
 * error and no result; later errors end the result with finish reason "error" (see
 * ebb_result_get_error). `callback` may be NULL. The request's KV is freed before this returns.
 * The request may be reused (a cancelled request stays cancelled). */
EBB_API ebb_error* ebb_generate(ebb_model* model, const ebb_request* request,
                                ebb_text_callback callback, void* user_data, ebb_result** out);
/* ---- Generation in pull form (ebb::Generation) ----------------------------------------------
 * ebb_generate is a loop over these: start, next until done, finish. A caller that streams
 * (a server, an event loop) calls ebb_generation_start before it commits to an answer: every
 * error before the first token (bad request, KV budget) comes from it. */
typedef struct ebb_generation ebb_generation;

/* Validates the request, reserves its KV and runs the prompt. The generation copies the request
 * (which may then be freed or reused; ebb_request_cancel on it still cancels this generation)
 * and keeps a reference to the model. Errors as ebb_generate's before the first token. */
EBB_API ebb_error* ebb_generation_start(ebb_model* model, const ebb_request* request,
                                        ebb_generation** out);
/* Runs decode steps until row 0 has new text: *out_piece (borrowed, NUL-terminated, `*out_len`
 * bytes of complete UTF-8, valid until the next call on the generation) and *out_done = 0; or,
 * when the request has ended, *out_piece = "", *out_len = 0 and *out_done = 1 (its KV is freed
 * by then; call ebb_generation_finish for the result). A decoding error does not fail this
 * call: the request ends and the result carries the error. EBB_FAILED_PRECONDITION after
 * ebb_generation_finish. */
EBB_API ebb_error* ebb_generation_next(ebb_generation* generation, const char** out_piece,
                                       size_t* out_len, int* out_done);
/* Ends the generation (if it had not ended: finish reason "cancelled"), frees its KV and gives
 * the result, as ebb_generate's. Once only; the generation may then only be freed. */
EBB_API ebb_error* ebb_generation_finish(ebb_generation* generation, ebb_result** out);
/* Frees the generation (and its KV, when it was not finished). Accepts NULL. */
EBB_API void ebb_generation_free(ebb_generation* generation);

EBB_API void ebb_result_free(ebb_result* result);
/* Generated text (row 0); borrowed, valid while `result` lives. */
EBB_API const char* ebb_result_get_text(const ebb_result* result);
/* Generated ids (row 0); borrowed. */
EBB_API void ebb_result_get_ids(const ebb_result* result, const int32_t** out_ids,
                                size_t* out_count);
/* "stop", "length", "cancelled" or "error". Static storage. */
EBB_API const char* ebb_result_get_finish_reason(const ebb_result* result);
EBB_API uint64_t ebb_result_get_prompt_tokens(const ebb_result* result);
EBB_API uint64_t ebb_result_get_completion_tokens(const ebb_result* result);
/* Of the prompt tokens, those taken from the model's prefix cache (not prefilled). */
EBB_API uint64_t ebb_result_get_cached_tokens(const ebb_result* result);
/* The error that ended a "error" result; NULL otherwise. Borrowed, valid while `result` lives. */
EBB_API const ebb_error* ebb_result_get_error(const ebb_result* result);
/* Row 0's log-probabilities when the request set "logprobs" (or "top_logprobs" > 0): a JSON
 * array with one object per generated id, {"id", "logprob", "top_logprobs": [{"id", "logprob"},
 * ...]} (natural logs; best first); "[]" otherwise. The caller frees it with ebb_string_free. */
EBB_API ebb_error* ebb_result_get_logprobs_json(const ebb_result* result, char** out_json);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EBB_EBB_H_ */
