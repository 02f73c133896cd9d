// ort_genai_c.h — ebb's declarations of onnxruntime-genai's C API (the 0.16 line).
//
// ebb's libonnxruntime-genai.so exports every function below under genai's name and C signature,
// implemented over ebb's public API (genai/src/). A genai C or C++ program builds against this
// header set and links against ebb's library instead of genai's; docs/genai.md lists what is
// supported and what differs.
//
// Contracts (genai's, kept): a function returning OgaResult* returns nullptr on success, else a
// result the caller reads with OgaResultGetError and frees with OgaDestroyResult. Strings returned
// through `const char**` are freed with OgaDestroyString, except OgaTokenizerStreamDecode's, which
// stays valid until the next call on that stream. Every OgaX* object is freed with OgaDestroyX.
// A generator params object (and a generator, and a tokenizer) keeps its model alive, so the
// model handle may be destroyed first. Objects are not thread-safe: one thread at a time each.
// These declarations are written for ebb; genai's header (MIT) is the interface they match.
#ifndef EBB_ORT_GENAI_C_H
#define EBB_ORT_GENAI_C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef _WIN32
#ifdef BUILDING_ORT_GENAI_C
#define OGA_EXPORT __declspec(dllexport)
#else
#define OGA_EXPORT __declspec(dllimport)
#endif
#define OGA_API_CALL _stdcall
#else
#define OGA_EXPORT __attribute__((visibility("default")))
#define OGA_API_CALL
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Element types of OgaTensor, in genai's order (the values are part of the ABI).
typedef enum OgaElementType {
  OgaElementType_undefined,
  OgaElementType_float32,
  OgaElementType_uint8,
  OgaElementType_int8,
  OgaElementType_uint16,
  OgaElementType_int16,
  OgaElementType_int32,
  OgaElementType_int64,
  OgaElementType_string,
  OgaElementType_bool,
  OgaElementType_float16,
  OgaElementType_float64,
  OgaElementType_uint32,
  OgaElementType_uint64,
  OgaElementType_complex64,
  OgaElementType_complex128,
  OgaElementType_bfloat16,
} OgaElementType;

typedef struct OgaResult OgaResult;
typedef struct OgaGeneratorParams OgaGeneratorParams;
typedef struct OgaGenerator OgaGenerator;
typedef struct OgaSpeculativeStats OgaSpeculativeStats;
typedef struct OgaRuntimeSettings OgaRuntimeSettings;
typedef struct OgaConfig OgaConfig;
typedef struct OgaModel OgaModel;
typedef struct OgaSequences OgaSequences;
typedef struct OgaTokenizer OgaTokenizer;
typedef struct OgaTokenizerStream OgaTokenizerStream;
typedef struct OgaTensor OgaTensor;
typedef struct OgaImages OgaImages;
typedef struct OgaNamedTensors OgaNamedTensors;
typedef struct OgaMultiModalProcessor OgaMultiModalProcessor;
typedef struct OgaAudios OgaAudios;
typedef struct OgaStringArray OgaStringArray;
typedef struct OgaAdapters OgaAdapters;
typedef struct OgaEngine OgaEngine;
typedef struct OgaRequest OgaRequest;
typedef struct OgaStreamingProcessor OgaStreamingProcessor;
typedef struct OgaMtpGenerator OgaMtpGenerator;

// ---- Process-wide: shutdown, results, strings, logging, GPU device id
OGA_EXPORT void OGA_API_CALL OgaShutdown();
OGA_EXPORT const char* OGA_API_CALL OgaResultGetError(const OgaResult* result);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogBool(const char* name, bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogString(const char* name, const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogCallback(void (*callback)(const char* string,
                                                                      size_t length));
OGA_EXPORT void OGA_API_CALL OgaDestroyResult(OgaResult* result);
OGA_EXPORT void OGA_API_CALL OgaDestroyString(const char*);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetCurrentGpuDeviceId(int device_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGetCurrentGpuDeviceId(int* device_id);

// ---- Token sequences
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateSequences(OgaSequences** out);
OGA_EXPORT void OGA_API_CALL OgaDestroySequences(OgaSequences* sequences);
OGA_EXPORT size_t OGA_API_CALL OgaSequencesCount(const OgaSequences* sequences);
OGA_EXPORT OgaResult* OGA_API_CALL OgaAppendTokenSequence(const int32_t* token_ptr,
                                                          size_t token_cnt,
                                                          OgaSequences* sequences);
OGA_EXPORT OgaResult* OGA_API_CALL OgaAppendTokenToSequence(int32_t token, OgaSequences* sequences,
                                                            size_t sequence_index);
OGA_EXPORT size_t OGA_API_CALL OgaSequencesGetSequenceCount(const OgaSequences* sequences,
                                                            size_t sequence_index);
OGA_EXPORT const int32_t* OGA_API_CALL OgaSequencesGetSequenceData(const OgaSequences* sequences,
                                                                   size_t sequence_index);

// ---- String arrays
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStringArray(OgaStringArray** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStringArrayFromStrings(const char* const* strs,
                                                                   size_t count,
                                                                   OgaStringArray** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyStringArray(OgaStringArray* string_array);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayAddString(OgaStringArray* string_array,
                                                           const char* str);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayGetCount(const OgaStringArray* string_array,
                                                          size_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayGetString(const OgaStringArray* string_array,
                                                           size_t index, const char** out);

// ---- Configs and models
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateConfig(const char* config_path, OgaConfig** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigClearProviders(OgaConfig* config);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigAppendProvider(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetProviderOption(OgaConfig* config,
                                                              const char* provider, const char* key,
                                                              const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigAddModelData(OgaConfig* config,
                                                         const char* model_filename,
                                                         const void* model_data,
                                                         size_t model_data_length);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigRemoveModelData(OgaConfig* config,
                                                            const char* model_filename);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigOverlay(OgaConfig* config, const char* json);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModel(const char* config_path, OgaModel** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModelFromConfig(const OgaConfig* config,
                                                            OgaModel** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaModelGetType(const OgaModel* model, const char** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaModelGetDeviceType(const OgaModel* model, const char** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyConfig(OgaConfig* config);
OGA_EXPORT void OGA_API_CALL OgaDestroyModel(OgaModel* model);

// ---- Generator parameters
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateGeneratorParams(const OgaModel* model,
                                                            OgaGeneratorParams** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyGeneratorParams(OgaGeneratorParams* params);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchNumber(OgaGeneratorParams* params,
                                                                     const char* name,
                                                                     double value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchBool(OgaGeneratorParams* params,
                                                                   const char* name, bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetGuidance(OgaGeneratorParams* params,
                                                                 const char* type, const char* data,
                                                                 bool enable_ff_tokens);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchNumber(
    const OgaGeneratorParams* params, const char* name, double* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchBool(const OgaGeneratorParams* params,
                                                                   const char* name, bool* value);

// ---- Generators
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateGenerator(const OgaModel* model,
                                                      const OgaGeneratorParams* params,
                                                      OgaGenerator** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyGenerator(OgaGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaGenerator_IsDone(OgaGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaGenerator_IsSessionTerminated(const OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetModelInput(OgaGenerator* generator,
                                                              const char* name, OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetInputs(OgaGenerator* generator,
                                                          const OgaNamedTensors* named_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaGenerator_AppendTokenSequences(OgaGenerator* generator, const OgaSequences* p_sequences);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_AppendTokens(OgaGenerator* generator,
                                                             const int32_t* input_ids,
                                                             size_t input_ids_count);
OGA_EXPORT size_t OGA_API_CALL OgaGenerator_TokenCount(const OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GenerateNextToken(OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetNextTokens(const OgaGenerator* generator,
                                                              const int32_t** out,
                                                              size_t* out_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetRuntimeOption(OgaGenerator* generator,
                                                                 const char* key,
                                                                 const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_RewindTo(OgaGenerator* generator,
                                                         size_t new_length);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetInput(const OgaGenerator* generator,
                                                         const char* name, OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetOutput(const OgaGenerator* generator,
                                                          const char* name, OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetLogits(OgaGenerator* generator, OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetLogits(OgaGenerator* generator,
                                                          OgaTensor* tensor);
OGA_EXPORT size_t OGA_API_CALL OgaGenerator_GetSequenceCount(const OgaGenerator* generator,
                                                             size_t index);
OGA_EXPORT const int32_t* OGA_API_CALL OgaGenerator_GetSequenceData(const OgaGenerator* generator,
                                                                    size_t index);

// ---- Tokenizers and tokenizer streams
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizer(const OgaModel* model, OgaTokenizer** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTokenizer(OgaTokenizer*);
OGA_EXPORT OgaResult* OGA_API_CALL OgaUpdateTokenizerOptions(OgaTokenizer* tokenizer,
                                                             const char* const* keys,
                                                             const char* const* values,
                                                             size_t num_options);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBosTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEosTokenIds(const OgaTokenizer* tokenizer,
                                                              const int32_t** eos_token_ids,
                                                              size_t* token_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetPadTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBotTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEotTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBorTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEorTokenId(const OgaTokenizer* tokenizer,
                                                             int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerEncode(const OgaTokenizer*, const char* str,
                                                      OgaSequences* sequences);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerEncodeBatch(const OgaTokenizer*,
                                                           const char** strings, size_t count,
                                                           OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerDecodeBatch(const OgaTokenizer*,
                                                           const OgaTensor* tensor,
                                                           OgaStringArray** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerToTokenId(const OgaTokenizer* tokenizer,
                                                         const char* str, int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerDecode(const OgaTokenizer*, const int32_t* tokens,
                                                      size_t token_count, const char** out_string);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplate(
    const OgaTokenizer*, const char* template_str, const char* messages, const char* tools,
    bool add_generation_prompt, const char** out_string);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplateWithOptions(
    const OgaTokenizer*, const char* template_str, const char* messages, const char* tools,
    const char* template_kwargs, bool add_generation_prompt, const char** out_string);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizerStream(const OgaTokenizer*,
                                                            OgaTokenizerStream** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTokenizerStream(OgaTokenizerStream*);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerStreamDecode(OgaTokenizerStream*, int32_t token,
                                                            const char** out);

// ---- Tensors and named tensors
OGA_EXPORT void OGA_API_CALL OgaDestroyNamedTensors(OgaNamedTensors*);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTensorFromBuffer(void* data, const int64_t* shape_dims,
                                                             size_t shape_dims_count,
                                                             OgaElementType element_type,
                                                             OgaTensor** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTensor(OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetType(OgaTensor*, OgaElementType* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetShapeRank(OgaTensor*, size_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetShape(OgaTensor*, int64_t* shape_dims,
                                                     size_t shape_dims_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetData(OgaTensor*, void** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateNamedTensors(OgaNamedTensors** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsGet(OgaNamedTensors* named_tensors,
                                                      const char* name, OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsSet(OgaNamedTensors* named_tensors,
                                                      const char* name, OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsDelete(OgaNamedTensors* named_tensors,
                                                         const char* name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsCount(const OgaNamedTensors* named_tensors,
                                                        size_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsGetNames(const OgaNamedTensors* named_tensors,
                                                           OgaStringArray** out);

// ---- Declared for link compatibility; ebb does not support these (images, audio, multimodal
// processors, streaming ASR, MTP and speculative decoding, adapters, the engine/request API, EP
// plug-in libraries, runtime settings handles, hardware device selection). Each returns an
// OgaResult naming itself and what ebb supports instead; functions without a result log that
// message.
OGA_EXPORT void OGA_API_CALL OgaSetTelemetryEnabled(bool enabled);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImage(const char* image_path, OgaImages** images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImages(const OgaStringArray* image_paths,
                                                 OgaImages** images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImagesFromBuffers(const void** image_data,
                                                            const size_t* image_data_sizes,
                                                            size_t count, OgaImages** images);
OGA_EXPORT void OGA_API_CALL OgaDestroyImages(OgaImages* images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudio(const char* audio_path, OgaAudios** audios);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudios(const OgaStringArray* audio_paths,
                                                 OgaAudios** audios);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudiosFromBuffers(const void** audio_data,
                                                            const size_t* audio_data_sizes,
                                                            size_t count, OgaAudios** audios);
OGA_EXPORT void OGA_API_CALL OgaDestroyAudios(OgaAudios* audios);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateRuntimeSettings(OgaRuntimeSettings** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyRuntimeSettings(OgaRuntimeSettings* settings);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRuntimeSettingsSetHandle(OgaRuntimeSettings* settings,
                                                               const char* handle_name,
                                                               void* handle);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateConfigFromPackageEp(const char* config_path,
                                                                const char* ep, OgaConfig** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceType(
    OgaConfig* config, const char* provider, const char* hardware_device_type);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceId(
    OgaConfig* config, const char* provider, uint32_t hardware_device_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareVendorId(
    OgaConfig* config, const char* provider, uint32_t hardware_vendor_id);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaConfigClearDecoderProviderOptionsHardwareDeviceType(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaConfigClearDecoderProviderOptionsHardwareDeviceId(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaConfigClearDecoderProviderOptionsHardwareVendorId(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModelWithRuntimeSettings(
    const char* config_path, const OgaRuntimeSettings* settings, OgaModel** out);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaGeneratorParamsSetSpeculativeNumber(OgaGeneratorParams* params, const char* name, double value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeNumber(
    const OgaGeneratorParams* params, const char* name, double* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeBool(OgaGeneratorParams* params,
                                                                        const char* name,
                                                                        bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeBool(
    const OgaGeneratorParams* params, const char* name, bool* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateMtpGenerator(const OgaModel* main_model,
                                                         const OgaModel* mtp_model,
                                                         const OgaGeneratorParams* params,
                                                         OgaMtpGenerator** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_AppendTokens(OgaMtpGenerator* generator,
                                                                const int32_t* input_ids,
                                                                size_t input_ids_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_GenerateNextToken(OgaMtpGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaMtpGenerator_IsDone(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetSequenceCount(const OgaMtpGenerator* generator);
OGA_EXPORT const int32_t* OGA_API_CALL
OgaMtpGenerator_GetSequenceData(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetForwardCount(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetAcceptCount(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetTrialCount(const OgaMtpGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaMtpGenerator_GetSpeculativeStats(const OgaMtpGenerator* generator, OgaSpeculativeStats** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyMtpGenerator(OgaMtpGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SnapshotState(OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetHiddenStates(OgaGenerator* generator,
                                                                OgaTensor* hidden_states);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetSpeculativeStats(const OgaGenerator* generator,
                                                                    OgaSpeculativeStats** out);
OGA_EXPORT void OGA_API_CALL OgaDestroySpeculativeStats(OgaSpeculativeStats* stats);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetCount(const OgaSpeculativeStats* stats,
                                                               const char* name, uint64_t* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetNumber(const OgaSpeculativeStats* stats,
                                                                const char* name, double* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetBool(const OgaSpeculativeStats* stats,
                                                              const char* name, bool* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateMultiModalProcessor(const OgaModel* model,
                                                                OgaMultiModalProcessor** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyMultiModalProcessor(OgaMultiModalProcessor* processor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImages(const OgaMultiModalProcessor*,
                                                             const char* prompt,
                                                             const OgaImages* images,
                                                             OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaProcessorProcessImagesAndPrompts(const OgaMultiModalProcessor*, const OgaStringArray* prompts,
                                    const OgaImages* images, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessAudios(const OgaMultiModalProcessor*,
                                                             const char* prompt,
                                                             const OgaAudios* audios,
                                                             OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaProcessorProcessAudiosAndPrompts(const OgaMultiModalProcessor*, const OgaStringArray* prompts,
                                    const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudios(
    const OgaMultiModalProcessor*, const char* prompt, const OgaImages* images,
    const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudiosAndPrompts(
    const OgaMultiModalProcessor*, const OgaStringArray* prompts, const OgaImages* images,
    const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorDecode(const OgaMultiModalProcessor*,
                                                      const int32_t* tokens, size_t token_count,
                                                      const char** out_string);
OGA_EXPORT OgaResult* OGA_API_CALL
OgaCreateTokenizerStreamFromProcessor(const OgaMultiModalProcessor*, OgaTokenizerStream** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateAdapters(const OgaModel* model, OgaAdapters** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyAdapters(OgaAdapters* adapters);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAdapter(OgaAdapters* adapters,
                                                  const char* adapter_file_path,
                                                  const char* adapter_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaUnloadAdapter(OgaAdapters* adapters,
                                                    const char* adapter_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetActiveAdapter(OgaGenerator* generator,
                                                       OgaAdapters* adapters,
                                                       const char* adapter_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateEngine(OgaModel* model, OgaEngine** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyEngine(OgaEngine* engine);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineStep(OgaEngine* engine, OgaRequest** request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineHasPendingRequests(OgaEngine* engine, bool* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineAddRequest(OgaEngine* engine, OgaRequest* request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineRemoveRequest(OgaEngine* engine, OgaRequest* request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateRequest(OgaGeneratorParams* params, OgaRequest** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestAddTokens(OgaRequest* request,
                                                       const OgaSequences* tokens);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestContinue(OgaRequest* request,
                                                      const OgaSequences* tokens);
OGA_EXPORT void OGA_API_CALL OgaDestroyRequest(OgaRequest* request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestSetOpaqueData(OgaRequest* request, void* opaque_data);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestGetOpaqueData(OgaRequest* request, void** opaque_data);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestHasUnseenTokens(const OgaRequest* request, bool* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestGetUnseenToken(OgaRequest* request, int32_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestIsTurnComplete(const OgaRequest* request, bool* out);
OGA_EXPORT void OGA_API_CALL OgaRegisterExecutionProviderLibrary(const char* registration_name,
                                                                 const char* library_path);
OGA_EXPORT void OGA_API_CALL OgaUnregisterExecutionProviderLibrary(const char* registration_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStreamingProcessor(OgaModel* model,
                                                               OgaStreamingProcessor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorProcess(OgaStreamingProcessor* processor,
                                                                const float* audio_data,
                                                                size_t num_samples,
                                                                OgaNamedTensors** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorFlush(OgaStreamingProcessor* processor,
                                                              OgaNamedTensors** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyStreamingProcessor(OgaStreamingProcessor* processor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorSetOption(OgaStreamingProcessor* processor,
                                                                  const char* key,
                                                                  const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorGetOption(
    const OgaStreamingProcessor* processor, const char* key, const char** value);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // EBB_ORT_GENAI_C_H
