/* The C ABI end to end, compiled as C11 (-std=c11 -pedantic -Wall -Werror):
 *   c_api_test MODEL_DIR
 * loads a model with session and provider options, streams a generation, runs the token-level
 * generator, shrinks, reads stats, provokes ResourceExhausted, InvalidArgument and Unavailable
 * (a CUDA provider option on a CPU-only ONNX Runtime), renders messages with a chat_template
 * given at load, and frees everything (ASan: no leaks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/ebb.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      g_failures++;                                                            \
    }                                                                          \
  } while (0)

/* Fails the test and returns 1 when `err` is not NULL (frees it). */
static int ok(ebb_error* err, const char* what) {
  if (err == NULL) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, ebb_error_code_name(ebb_error_get_code(err)),
          ebb_error_get_message(err));
  ebb_error_free(err);
  g_failures++;
  return 1;
}

/* Checks that `err` has `code` and that its message contains `needle`; frees it. */
static void expect_error(ebb_error* err, ebb_error_code code, const char* needle,
                         const char* what) {
  if (err == NULL) {
    fprintf(stderr, "%s: expected %s, got success\n", what, ebb_error_code_name(code));
    g_failures++;
    return;
  }
  if (ebb_error_get_code(err) != code || strstr(ebb_error_get_message(err), needle) == NULL) {
    fprintf(stderr, "%s: expected %s containing '%s', got %s: %s\n", what,
            ebb_error_code_name(code), needle, ebb_error_code_name(ebb_error_get_code(err)),
            ebb_error_get_message(err));
    g_failures++;
  } else {
    printf("%s: %s: %s\n", what, ebb_error_code_name(code), ebb_error_get_message(err));
  }
  ebb_error_free(err);
}

struct stream_state {
  char text[4096];
  size_t len;
  int pieces;
};

static int on_piece(void* user, const char* piece, size_t len) {
  struct stream_state* s = (struct stream_state*)user;
  if (strlen(piece) != len) g_failures++;
  if (s->len + len < sizeof(s->text)) {
    memcpy(s->text + s->len, piece, len);
    s->len += len;
    s->text[s->len] = '\0';
  }
  s->pieces++;
  return 0;
}

static int cancel_after_first(void* user, const char* piece, size_t len) {
  (void)piece;
  (void)len;
  (*(int*)user)++;
  return 1;
}

int main(int argc, char** argv) {
  ebb_runtime_options* ro = NULL;
  ebb_runtime* rt = NULL;
  ebb_model_options* mo = NULL;
  ebb_model* model = NULL;
  ebb_request* req = NULL;
  ebb_result* res = NULL;
  char* json = NULL;
  struct stream_state stream;
  const char* dir;

  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  CHECK(ebb_c_abi_version() == EBB_C_ABI_VERSION);
  CHECK(strlen(ebb_version()) > 0);

  /* A runtime with a memory limit; a misspelled runtime key is InvalidArgument. */
  if (ok(ebb_runtime_options_create(&ro), "runtime_options_create")) return 1;
  if (ok(ebb_runtime_options_set(ro, "memory.limit", "1GiB"), "memory.limit")) return 1;
  expect_error(ebb_runtime_options_set(ro, "memory.limt", "1GiB"), EBB_INVALID_ARGUMENT,
               "memory.limit", "misspelled runtime key");
  if (ok(ebb_runtime_create(ro, &rt), "runtime_create")) return 1;
  ebb_runtime_options_free(ro);

  /* Load with session and provider options (the CUDA options are unused: execution_provider
   * is cpu). */
  if (ok(ebb_model_options_create(&mo), "model_options_create")) return 1;
  ok(ebb_model_options_set(mo, "session_options.intra_op_num_threads", "1"), "session opt");
  ok(ebb_model_options_set(mo, "session_options.session.use_device_allocator_for_initializers",
                           "1"),
     "session config entry");
  ok(ebb_model_options_set(mo, "provider_options.cuda.gpu_mem_limit", "1073741824"),
     "provider opt");
  ok(ebb_model_options_set(mo, "execution_provider", "cpu"), "execution_provider");
  ok(ebb_model_options_set(mo, "run_options.memory.enable_memory_arena_shrinkage", ""), "run opt");
  expect_error(ebb_model_options_set(mo, "kv_cache.max_byte", "1"), EBB_INVALID_ARGUMENT,
               "kv_cache.max_bytes", "misspelled model key");
  expect_error(ebb_model_options_set(mo, "session_options.intra_op_num_threads", "many"),
               EBB_INVALID_ARGUMENT, "intra_op_num_threads", "bad session value");
  if (ok(ebb_runtime_load(rt, "tiny", dir, mo, &model), "load")) return 1;
  ebb_model_options_free(mo);
  CHECK(strcmp(ebb_model_id(model), "tiny") == 0);
  ok(ebb_model_clear_run_option(model, "memory.enable_memory_arena_shrinkage"), "clear run opt");

  /* Loading under a taken id: FailedPrecondition. A missing folder: NotFound. */
  {
    ebb_model* dup = NULL;
    expect_error(ebb_runtime_load(rt, "tiny", dir, NULL, &dup), EBB_FAILED_PRECONDITION, "tiny",
                 "duplicate id");
    CHECK(dup == NULL);
    expect_error(ebb_runtime_load(rt, "missing", "/nonexistent/model", NULL, &dup), EBB_NOT_FOUND,
                 "/nonexistent/model", "missing folder");
  }

  /* A CUDA provider option on a CPU-only ONNX Runtime: Unavailable, naming the EP. */
  {
    ebb_model_options* cuda = NULL;
    ebb_model* m = NULL;
    ok(ebb_model_options_create(&cuda), "model_options_create");
    ok(ebb_model_options_set(cuda, "provider_options.cuda.gpu_mem_limit", "1073741824"), "cuda");
    expect_error(ebb_runtime_load(rt, "cuda", dir, cuda, &m), EBB_UNAVAILABLE, "cuda",
                 "cuda without a CUDA EP");
    CHECK(m == NULL);
    ebb_model_options_free(cuda);
  }

  /* Issue 24: the chat_template load option (the template text, or a Jinja file) renders
   * messages; a file that does not parse fails the load naming it, with line and column; a
   * non-UTF-8 run option key is refused when it is set (it used to be accepted, and then
   * ebb_model_run_options_json failed with internal). */
  {
    const char* tmpl = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
    const char* bad_file = "c_api_test_bad_template.jinja"; /* in ctest's working folder */
    ebb_model_options* ct = NULL;
    ebb_model* m = NULL;
    ebb_request* r = NULL;
    ebb_result* out = NULL;
    FILE* f = NULL;
    ok(ebb_model_options_create(&ct), "model_options_create");
    expect_error(ebb_model_options_set(ct, "run_options.bad\xff", "1"), EBB_INVALID_ARGUMENT,
                 "not valid UTF-8", "non-UTF-8 run option key");
    ok(ebb_model_options_set(ct, "chat_template", tmpl), "chat_template (text)");
    if (!ok(ebb_runtime_load(rt, "ct", dir, ct, &m), "load with chat_template")) {
      ok(ebb_request_create(&r), "request_create");
      ok(ebb_request_add_message(r, "user", "hello"), "message");
      ok(ebb_request_set_option(r, "max_new_tokens", "2"), "max_new_tokens");
      if (!ok(ebb_generate(m, r, NULL, NULL, &out), "chat with chat_template")) {
        int32_t* ids = NULL;
        size_t n = 0;
        /* The template renders the content alone: the prompt is "hello" without BOS. */
        if (!ok(ebb_model_encode(m, "hello", 0, &ids, &n), "encode")) {
          CHECK(ebb_result_get_prompt_tokens(out) == n);
          ebb_ids_free(ids);
        }
        ebb_result_free(out);
      }
      ebb_request_free(r);
      if (!ok(ebb_model_run_options_json(m, &json), "run_options_json")) ebb_string_free(json);
      ebb_model_free(m);
      ok(ebb_runtime_unload(rt, "ct", 0), "unload ct");
    }
    ebb_model_options_free(ct);
    f = fopen(bad_file, "w");
    if (f != NULL) {
      fputs("{{ oops", f);
      fclose(f);
      ok(ebb_model_options_create(&ct), "model_options_create");
      ok(ebb_model_options_set(ct, "chat_template", bad_file), "chat_template (file)");
      m = NULL;
      expect_error(ebb_runtime_load(rt, "ctbad", dir, ct, &m), EBB_INVALID_ARGUMENT,
                   "c_api_test_bad_template.jinja:1:", "a template that does not parse");
      CHECK(m == NULL);
      ebb_model_options_free(ct);
      remove(bad_file);
    } else {
      fprintf(stderr, "cannot write %s in the working folder\n", bad_file);
      g_failures++;
    }
  }

  /* Stream a greedy generation. */
  memset(&stream, 0, sizeof stream);
  if (ok(ebb_request_create(&req), "request_create")) return 1;
  ok(ebb_request_set_prompt(req, "hello world"), "prompt");
  ok(ebb_request_set_option(req, "max_new_tokens", "8"), "max_new_tokens");
  ok(ebb_request_set_option(req, "max_length", "64"), "max_length");
  expect_error(ebb_request_set_option(req, "temprature", "0.5"), EBB_INVALID_ARGUMENT,
               "temperature", "misspelled request key");
  expect_error(ebb_request_set_option(req, "max_new_tokens", "-1"), EBB_INVALID_ARGUMENT,
               "max_new_tokens", "bad max_new_tokens");
  ok(ebb_model_shrink_after_next_run(model), "shrink_after_next_run");
  if (ok(ebb_generate(model, req, on_piece, &stream, &res), "generate")) return 1;
  {
    const int32_t* ids = NULL;
    size_t n = 0;
    ebb_result_get_ids(res, &ids, &n);
    CHECK(n > 0 && n <= 8);
    CHECK(ebb_result_get_completion_tokens(res) == n);
    CHECK(ebb_result_get_prompt_tokens(res) > 0);
    CHECK(strcmp(ebb_result_get_text(res), stream.text) == 0);
    CHECK(ebb_result_get_error(res) == NULL);
    printf("generated %zu tokens in %d pieces, finish %s: '%s'\n", n, stream.pieces,
           ebb_result_get_finish_reason(res), ebb_result_get_text(res));
  }
  ebb_result_free(res);
  res = NULL;

  /* Structured output: a regex constrains the text; a schema keyword ebb cannot honour fails
   * ebb_generate before any token, naming it (docs/structured_output.md). */
  {
    ebb_request* cr = NULL;
    if (!ok(ebb_request_create(&cr), "request_create (regex)")) {
      ok(ebb_request_set_prompt(cr, "hello"), "prompt");
      ok(ebb_request_set_option(cr, "max_new_tokens", "20"), "max_new_tokens");
      ok(ebb_request_set_option(cr, "regex", "[0-9]{3}-[a-c]{2}"), "regex");
      if (!ok(ebb_generate(model, cr, NULL, NULL, &res), "generate (regex)")) {
        const char* text = ebb_result_get_text(res);
        CHECK(strlen(text) == 6 && text[3] == '-');
        CHECK(strcmp(ebb_result_get_finish_reason(res), "stop") == 0);
        ebb_result_free(res);
        res = NULL;
      }
      ok(ebb_request_set_option(cr, "regex", ""), "regex off");
      ok(ebb_request_set_option(cr, "json_schema", "{\"type\": \"integer\", \"multipleOf\": 3}"),
         "json_schema");
      expect_error(ebb_generate(model, cr, NULL, NULL, &res), EBB_INVALID_ARGUMENT, "multipleOf",
                   "unsupported schema keyword");
      ebb_request_free(cr);
    }
  }

  /* Pull form: start, next until done, finish; the same text as ebb_generate's callback got.
   * A KV budget that cannot hold the request fails at start, before any piece. */
  {
    ebb_generation* gen = NULL;
    char pulled[4096];
    size_t pulled_len = 0;
    int pieces = 0, done = 0;
    if (!ok(ebb_generation_start(model, req, &gen), "generation_start")) {
      while (!done) {
        const char* piece = NULL;
        size_t len = 0;
        if (ok(ebb_generation_next(gen, &piece, &len, &done), "generation_next")) break;
        if (done) {
          CHECK(len == 0 && piece != NULL && piece[0] == '\0');
          break;
        }
        CHECK(len > 0 && strlen(piece) == len);
        if (pulled_len + len < sizeof pulled) {
          memcpy(pulled + pulled_len, piece, len);
          pulled_len += len;
        }
        ++pieces;
      }
      pulled[pulled_len] = '\0';
      CHECK(strcmp(pulled, stream.text) == 0);
      CHECK(pieces == stream.pieces);
      if (!ok(ebb_generation_finish(gen, &res), "generation_finish")) {
        CHECK(strcmp(ebb_result_get_text(res), stream.text) == 0);
        CHECK(ebb_result_get_error(res) == NULL);
        ebb_result_free(res);
        res = NULL;
      }
      expect_error(ebb_generation_finish(gen, &res), EBB_FAILED_PRECONDITION, "twice",
                   "generation_finish twice");
      ebb_generation_free(gen);
    }
    /* Left before its end: finish says "cancelled" and keeps the text so far. */
    gen = NULL;
    if (!ok(ebb_generation_start(model, req, &gen), "generation_start (early finish)")) {
      const char* piece = NULL;
      size_t len = 0;
      ok(ebb_generation_next(gen, &piece, &len, &done), "generation_next (early finish)");
      if (!ok(ebb_generation_finish(gen, &res), "generation_finish (early)")) {
        /* With two pieces or more, the first is not the row's last. */
        CHECK(stream.pieces < 2 || strcmp(ebb_result_get_finish_reason(res), "cancelled") == 0);
        CHECK(strlen(ebb_result_get_text(res)) == len);
        ebb_result_free(res);
        res = NULL;
      }
      expect_error(ebb_generation_next(gen, &piece, &len, &done), EBB_FAILED_PRECONDITION,
                   "after ebb_generation_finish", "generation_next after finish");
      ebb_generation_free(gen);
    }
    /* Freed without finish: nothing leaks (ASan). */
    gen = NULL;
    if (!ok(ebb_generation_start(model, req, &gen), "generation_start (free)")) {
      ebb_generation_free(gen);
    }
    ebb_generation_free(NULL);
  }

  /* Cancel from the callback: finish reason "cancelled", KV back to 0. */
  {
    int calls = 0;
    ebb_request* r2 = NULL;
    ok(ebb_request_create(&r2), "request_create");
    ok(ebb_request_set_prompt(r2, "hello world"), "prompt");
    ok(ebb_request_set_option(r2, "max_new_tokens", "16"), "max_new_tokens");
    ok(ebb_request_set_option(r2, "max_length", "64"), "max_length");
    if (!ok(ebb_generate(model, r2, cancel_after_first, &calls, &res), "generate/cancel")) {
      CHECK(strcmp(ebb_result_get_finish_reason(res), "cancelled") == 0);
      ebb_result_free(res);
      res = NULL;
    }
    ebb_request_free(r2);
  }

  /* Issue 24: logit_bias forces a token (+100) or bans one (-100), penalties and logprobs are
   * request keys; an id beyond the vocabulary is refused naming it. */
  {
    ebb_request* r3 = NULL;
    char* json = NULL;
    const int32_t* ids = NULL;
    size_t n = 0, i;
    ok(ebb_request_create(&r3), "request_create");
    ok(ebb_request_set_prompt(r3, "hello world"), "prompt");
    ok(ebb_request_set_option(r3, "max_new_tokens", "4"), "max_new_tokens");
    ok(ebb_request_set_option(r3, "logit_bias", "{\"500\": 100}"), "logit_bias");
    ok(ebb_request_set_option(r3, "frequency_penalty", "0.5"), "frequency_penalty");
    ok(ebb_request_set_option(r3, "presence_penalty", "-0.5"), "presence_penalty");
    ok(ebb_request_set_option(r3, "top_logprobs", "2"), "top_logprobs");
    expect_error(ebb_request_set_option(r3, "logit_bias", "500=101"), EBB_INVALID_ARGUMENT,
                 "logit_bias", "bias out of range");
    expect_error(ebb_request_set_option(r3, "presence_penalty", "3"), EBB_INVALID_ARGUMENT,
                 "presence_penalty", "penalty out of range");
    if (!ok(ebb_generate(model, r3, NULL, NULL, &res), "generate/logit_bias")) {
      ebb_result_get_ids(res, &ids, &n);
      CHECK(n == 4);
      for (i = 0; i < n; ++i) CHECK(ids[i] == 500);
      if (!ok(ebb_result_get_logprobs_json(res, &json), "logprobs_json")) {
        CHECK(strncmp(json, "[{\"id\":500,\"logprob\":", 21) == 0);
        CHECK(strstr(json, "\"top_logprobs\":[{\"id\":500,") != NULL);
        ebb_string_free(json);
      }
      ebb_result_free(res);
      res = NULL;
    }
    ok(ebb_request_set_option(r3, "logit_bias", "10000000=-100"), "logit_bias (big id)");
    expect_error(ebb_generate(model, r3, NULL, NULL, &res), EBB_INVALID_ARGUMENT, "vocab_size",
                 "logit_bias beyond the vocabulary");
    CHECK(res == NULL);
    ebb_request_free(r3);
  }

  /* Token level: append, step, logits, rewind. */
  {
    ebb_generator_params* gp = NULL;
    ebb_generator* gen = NULL;
    const int32_t prompt[] = {5, 17, 42, 99};
    const int32_t* seq = NULL;
    const float* logits = NULL;
    size_t n = 0;
    ok(ebb_generator_params_create(&gp), "params_create");
    ok(ebb_generator_params_set(gp, "max_length", "16"), "params max_length");
    expect_error(ebb_generator_params_set(gp, "top_k", "x"), EBB_INVALID_ARGUMENT, "top_k",
                 "bad top_k");
    if (!ok(ebb_generator_create(model, gp, &gen), "generator_create")) {
      ok(ebb_generator_append_tokens(gen, prompt, 4), "append");
      ok(ebb_generator_generate_next_token(gen), "next");
      ok(ebb_generator_get_sequence(gen, &seq, &n), "sequence");
      CHECK(n == 5 && seq[0] == 5);
      ok(ebb_generator_get_logits(gen, &logits, &n), "logits");
      CHECK(n > 0 && logits != NULL);
      ok(ebb_generator_rewind_to(gen, 4), "rewind");
      ok(ebb_generator_get_sequence(gen, &seq, &n), "sequence");
      CHECK(n == 4);
      while (!ebb_generator_is_done(gen)) {
        if (ok(ebb_generator_generate_next_token(gen), "next")) break;
      }
      ebb_generator_free(gen);
    }
    ebb_generator_params_free(gp);
  }

  /* Tokenizer. */
  {
    int32_t* ids = NULL;
    size_t n = 0;
    char* text = NULL;
    if (!ok(ebb_model_encode(model, "hello", 0, &ids, &n), "encode")) {
      CHECK(n > 0);
      if (!ok(ebb_model_decode(model, ids, n, 0, &text), "decode")) {
        CHECK(strcmp(text, "hello") == 0);
        ebb_string_free(text);
      }
      ebb_ids_free(ids);
    }
  }

  /* Tier 2 controls and stats. */
  ok(ebb_model_shrink_arena(model), "shrink_arena");
  ok(ebb_model_shrink_every(model, 4), "shrink_every");
  ok(ebb_model_shrink_above(model, 0), "shrink_above");
  ok(ebb_model_set_run_option(model, "some.key", "1"), "set_run_option");
  if (!ok(ebb_model_run_options_json(model, &json), "run_options_json")) {
    CHECK(strstr(json, "\"some.key\"") != NULL);
    ebb_string_free(json);
  }
  ok(ebb_model_clear_run_option(model, "some.key"), "clear_run_option");
  if (!ok(ebb_model_stats_json(model, &json), "model_stats_json")) {
    printf("model stats: %s\n", json);
    CHECK(strstr(json, "\"kv\"") != NULL && strstr(json, "\"num_shrinks\"") != NULL);
    CHECK(strstr(json, "\"in_use_bytes\":0") != NULL);
    ebb_string_free(json);
  }
  if (!ok(ebb_runtime_stats_json(rt, &json), "runtime_stats_json")) {
    CHECK(strstr(json, "\"process\"") != NULL);
    CHECK(strstr(json, "\"file_bytes\"") != NULL);
    CHECK(strstr(json, "\"anon_bytes\"") != NULL);
    CHECK(strstr(json, "\"shmem_bytes\"") != NULL);
    ebb_string_free(json);
  }
  if (!ok(ebb_runtime_list_json(rt, &json), "list_json")) {
    printf("list: %s\n", json);
    CHECK(strstr(json, "\"id\":\"tiny\"") != NULL);
    ebb_string_free(json);
  }
  if (!ok(ebb_model_info_json(model, &json), "info_json")) {
    CHECK(strstr(json, "\"vocab_size\"") != NULL);
    ebb_string_free(json);
  }

  /* Issue 25: the prefix cache. Pinning with the cache off is FailedPrecondition naming
   * prefix_cache.max_bytes; with it on (a run option), a pin holds whole blocks, shows in the
   * stats, a request with the same ids starts from them, and unpinning and dropping free them. */
  {
    int32_t* ids = NULL;
    size_t n = 0;
    ebb_request* r = NULL;
    ebb_result* out = NULL;
    uint64_t freed = 1;
    const char* text =
        "You are a careful assistant. Answer every question about rivers, hills and the "
        "weather in two short sentences, and say so when you do not know.";
    if (!ok(ebb_model_encode(model, text, 1, &ids, &n), "encode the prefix")) {
      CHECK(n >= 32);
      expect_error(ebb_model_pin_prefix(model, ids, n, &json), EBB_FAILED_PRECONDITION,
                   "prefix_cache.max_bytes", "pin with the prefix cache off");
      expect_error(ebb_model_pin_prefix(model, NULL, n, &json), EBB_INVALID_ARGUMENT, "ids",
                   "pin NULL ids");
      ok(ebb_model_set_run_option(model, "prefix_cache.max_bytes", "8MiB"),
         "prefix_cache.max_bytes");
      expect_error(ebb_model_pin_prefix(model, ids, 8, &json), EBB_INVALID_ARGUMENT, "16",
                   "pin fewer ids than one block");
      if (!ok(ebb_model_pin_prefix(model, ids, n, &json), "pin_prefix")) {
        printf("pin: %s\n", json);
        CHECK(strstr(json, "\"pinned\":true") != NULL);
        CHECK(strstr(json, "\"pinned_bytes\":0") == NULL);
        ebb_string_free(json);
      }
      if (!ok(ebb_model_stats_json(model, &json), "stats with a pinned prefix")) {
        const char* pc = strstr(json, "\"prefix_cache\":{\"max_bytes\":8388608,");
        CHECK(pc != NULL);
        CHECK(pc != NULL && strstr(pc, "\"pinned_bytes\":0,") == NULL);
        ebb_string_free(json);
      }
      ok(ebb_request_create(&r), "request_create");
      ok(ebb_request_set_input_ids(r, ids, n), "input_ids");
      ok(ebb_request_set_option(r, "max_new_tokens", "2"), "max_new_tokens");
      if (!ok(ebb_generate(model, r, NULL, NULL, &out), "generate from the pinned prefix")) {
        /* Whole blocks, and at least one prompt token left to prefill. */
        CHECK(ebb_result_get_cached_tokens(out) == (n - 1) / 16 * 16);
        ebb_result_free(out);
      }
      ok(ebb_request_set_option(r, "cache_prompt", "false"), "cache_prompt=false");
      out = NULL;
      if (!ok(ebb_generate(model, r, NULL, NULL, &out), "generate with cache_prompt=false")) {
        CHECK(ebb_result_get_cached_tokens(out) == 0);
        ebb_result_free(out);
      }
      ebb_request_free(r);
      if (!ok(ebb_model_unpin_prefix(model, ids, n, &json), "unpin_prefix")) {
        CHECK(strstr(json, "\"pinned\":true") != NULL &&
              strstr(json, "\"pinned_bytes\":0") != NULL);
        ebb_string_free(json);
      }
      if (!ok(ebb_model_unpin_prefix(model, ids, n, &json), "unpin again")) {
        CHECK(strstr(json, "\"pinned\":false") != NULL);
        ebb_string_free(json);
      }
      if (!ok(ebb_model_drop_prefix_cache(model, &freed), "drop_prefix_cache")) {
        CHECK(freed > 0);
      }
      ok(ebb_model_drop_prefix_cache(model, NULL), "drop_prefix_cache without freed_bytes");
      ok(ebb_model_set_run_option(model, "prefix_cache.max_bytes", "0"), "prefix cache off");
      ebb_ids_free(ids);
    }
  }

  /* ResourceExhausted: a KV budget too small for one request. */
  {
    ebb_model_options* small = NULL;
    ebb_model* m = NULL;
    ok(ebb_model_options_create(&small), "model_options_create");
    ok(ebb_model_options_set(small, "kv_cache.max_bytes", "1KiB"), "kv_cache.max_bytes");
    if (!ok(ebb_runtime_load(rt, "small", dir, small, &m), "load small")) {
      expect_error(ebb_generate(m, req, NULL, NULL, &res), EBB_RESOURCE_EXHAUSTED,
                   "kv_cache.max_bytes", "kv budget");
      CHECK(res == NULL);
      {
        ebb_generation* gen = NULL;
        expect_error(ebb_generation_start(m, req, &gen), EBB_RESOURCE_EXHAUSTED,
                     "kv_cache.max_bytes", "kv budget at generation_start");
        CHECK(gen == NULL);
      }
      ebb_model_free(m);
      ok(ebb_runtime_unload(rt, "small", 0), "unload small");
    }
    ebb_model_options_free(small);
  }

  /* A model handle outlives an unload; the id is gone. */
  ok(ebb_runtime_unload(rt, "tiny", 0), "unload");
  expect_error(ebb_runtime_unload(rt, "tiny", 0), EBB_NOT_FOUND, "tiny", "unload twice");
  expect_error(ebb_generate(model, req, NULL, NULL, &res), EBB_FAILED_PRECONDITION, "",
               "generate on an unloaded model");
  expect_error(ebb_generate(model, NULL, NULL, NULL, &res), EBB_INVALID_ARGUMENT, "request",
               "NULL request");
  /* Issue 24: ebb_runtime_unload(force) and ebb_runtime_free on the thread that holds a live
   * generator return (they used to wait for it forever); the generator is detached and fails
   * its next call; freeing it afterwards is fine. A hang here is caught by ctest's timeout. */
  {
    ebb_model* m = NULL;
    ebb_generator* g1 = NULL;
    ebb_generator* g2 = NULL;
    const int32_t ids[3] = {5, 17, 42};
    if (!ok(ebb_runtime_load(rt, "held", dir, NULL, &m), "load held")) {
      ok(ebb_generator_create(m, NULL, &g1), "generator_create g1");
      ok(ebb_generator_append_tokens(g1, ids, 3), "append g1");
      ok(ebb_runtime_unload(rt, "held", 1), "forced unload with a held generator");
      expect_error(ebb_generator_generate_next_token(g1), EBB_FAILED_PRECONDITION,
                   "while this generator was idle", "detached by the forced unload");
      ebb_generator_free(g1);
      ebb_model_free(m);
    }
    m = NULL;
    if (!ok(ebb_runtime_load(rt, "held2", dir, NULL, &m), "load held2")) {
      ok(ebb_generator_create(m, NULL, &g2), "generator_create g2");
      ok(ebb_generator_append_tokens(g2, ids, 3), "append g2");
    }
    ebb_request_free(req);
    ebb_model_free(model);
    ebb_runtime_free(rt); /* g2 is alive on this thread */
    if (g2 != NULL) {
      expect_error(ebb_generator_generate_next_token(g2), EBB_FAILED_PRECONDITION,
                   "while this generator was idle", "detached by ebb_runtime_free");
      ebb_generator_free(g2);
    }
    ebb_model_free(m);
  }
  ebb_error_free(NULL);
  ebb_runtime_free(NULL);

  if (g_failures != 0) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  printf("c_api_test: all passed\n");
  return 0;
}
