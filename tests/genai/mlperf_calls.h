/* mlperf_calls.h — see mlperf_calls.c. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Greedy generation through MLPerf Client's 20 genai calls: the whole sequence (prompt included)
 * in out[0..*out_len). Returns 0, or 1 with the failing call's message in err. */
int mlperf_generate(const char* model_dir, const int32_t* prompt, size_t prompt_len, int max_length,
                    int32_t* out, size_t out_cap, size_t* out_len, char* err, size_t errcap);

#ifdef __cplusplus
}
#endif
