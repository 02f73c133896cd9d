// ebb_genai.h — what ebb's libonnxruntime-genai.so adds to genai's C API: ebb's memory figures
// and a shrink for a model created through genai's API, without any ebb header or library.
// Same result and string rules as ort_genai_c.h (docs/genai.md "Reading ebb's memory").
#ifndef EBB_GENAI_H
#define EBB_GENAI_H

#include "ort_genai_c.h"

#ifdef __cplusplus
extern "C" {
#endif

// The model's memory stats as one JSON object: weights, KV in use / reserved / peak, the ORT
// arena, the process and the device (the fields of ebb's MemoryStats, docs/memory.md). The
// string is freed with OgaDestroyString.
OGA_EXPORT OgaResult* OGA_API_CALL EbbOgaModelStatsJson(const OgaModel* model, const char** out);

// Shrinks the model's ORT arena and returns freed KV beyond kv_cache.retain_bytes to the OS now
// (ebb's ModelControls::ShrinkArena). The same as OgaGenerator_SetRuntimeOption keys
// memory.shrink_every / memory.shrink_above for a policy instead of a one-off.
OGA_EXPORT OgaResult* OGA_API_CALL EbbOgaModelShrink(const OgaModel* model);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // EBB_GENAI_H
