/* A C program that uses an installed ebb (tests/install/install_test.sh builds it with pkg-config
 * and with CMake): loads MODEL_DIR, generates 8 tokens from a prompt, prints the result. */
#include <ebb/ebb.h>
#include <stdio.h>

static int fail(ebb_error* err) {
  fprintf(stderr, "%s: %s\n", ebb_error_code_name(ebb_error_get_code(err)),
          ebb_error_get_message(err));
  ebb_error_free(err);
  return 1;
}

int main(int argc, char** argv) {
  ebb_runtime* rt = NULL;
  ebb_model* model = NULL;
  ebb_request* req = NULL;
  ebb_result* res = NULL;
  ebb_error* err;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  if ((err = ebb_runtime_create(NULL, &rt)) != NULL) return fail(err);
  if ((err = ebb_runtime_load(rt, "m", argv[1], NULL, &model)) != NULL) return fail(err);
  ebb_request_create(&req);
  ebb_request_set_prompt(req, "Hello");
  ebb_request_set_option(req, "max_new_tokens", "8");
  if ((err = ebb_generate(model, req, NULL, NULL, &res)) != NULL) return fail(err);
  printf("c: ebb %s, %llu completion tokens, finish %s\n", ebb_version(),
         (unsigned long long)ebb_result_get_completion_tokens(res),
         ebb_result_get_finish_reason(res));
  ebb_result_free(res);
  ebb_request_free(req);
  ebb_model_free(model);
  ebb_runtime_free(rt);
  return 0;
}
