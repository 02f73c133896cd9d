/* mlperf_calls.c — MLPerf Client's use of genai's C API (mlcommons/mlperf_client,
 * src/CIL/IHV/OrtGenAI/src/LLM/llm_inference.cpp): exactly the 20 C functions it calls, in its
 * order, written in C against ort_genai_c.h. tests/genai/genai_test.cpp compares its tokens with
 * ebb's native API. */
#include "mlperf_calls.h"

#include <stdio.h>
#include <string.h>

#include "ort_genai_c.h"

/* Copies a failed call's message into err and frees the result (OgaResultGetError,
 * OgaDestroyResult). Returns 1 when `r` was an error. */
static int failed(OgaResult* r, char* err, size_t errcap) {
  if (r == NULL) return 0;
  snprintf(err, errcap, "%s", OgaResultGetError(r));
  OgaDestroyResult(r);
  return 1;
}

int mlperf_generate(const char* model_dir, const int32_t* prompt, size_t prompt_len,
                    int max_length, int32_t* out, size_t out_cap, size_t* out_len, char* err,
                    size_t errcap) {
  OgaModel* model = NULL;
  OgaGeneratorParams* params = NULL;
  OgaSequences* sequences = NULL;
  OgaGenerator* generator = NULL;
  int rc = 1;
  *out_len = 0;
  err[0] = '\0';
  if (failed(OgaSetCurrentGpuDeviceId(0), err, errcap)) return 1;
  if (failed(OgaCreateModel(model_dir, &model), err, errcap)) return 1;
  if (failed(OgaCreateGeneratorParams(model, &params), err, errcap)) goto done;
  /* MLPerf sets these five; with do_sample left false (the config's) decoding is greedy. */
  if (failed(OgaGeneratorParamsSetSearchNumber(params, "top_p", 1.0), err, errcap)) goto done;
  if (failed(OgaGeneratorParamsSetSearchNumber(params, "top_k", 1), err, errcap)) goto done;
  if (failed(OgaGeneratorParamsSetSearchNumber(params, "temperature", 1.0), err, errcap)) goto done;
  if (failed(OgaGeneratorParamsSetSearchNumber(params, "min_length", 0), err, errcap)) goto done;
  if (failed(OgaGeneratorParamsSetSearchNumber(params, "max_length", max_length), err, errcap)) {
    goto done;
  }
  if (failed(OgaCreateSequences(&sequences), err, errcap)) goto done;
  if (failed(OgaAppendTokenSequence(prompt, prompt_len, sequences), err, errcap)) goto done;
  if (failed(OgaCreateGenerator(model, params, &generator), err, errcap)) goto done;
  if (failed(OgaGenerator_AppendTokenSequences(generator, sequences), err, errcap)) goto done;
  while (!OgaGenerator_IsDone(generator)) {
    if (failed(OgaGenerator_GenerateNextToken(generator), err, errcap)) goto done;
  }
  {
    const size_t n = OgaGenerator_GetSequenceCount(generator, 0);
    const int32_t* data = OgaGenerator_GetSequenceData(generator, 0);
    if (n > out_cap || data == NULL) {
      snprintf(err, errcap, "sequence of %zu tokens does not fit %zu", n, out_cap);
      goto done;
    }
    memcpy(out, data, n * sizeof(int32_t));
    *out_len = n;
  }
  rc = 0;
done:
  OgaDestroyGenerator(generator);
  OgaDestroySequences(sequences);
  OgaDestroyGeneratorParams(params);
  OgaDestroyModel(model);
  OgaShutdown();
  return rc;
}
