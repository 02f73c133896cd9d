// oga_unsupported.cpp — genai functions ebb declares for link compatibility only: images, audio,
// multimodal and streaming processors, MTP and speculative decoding, adapters, the engine/request
// API, EP plug-in libraries, runtime settings handles and hardware device selection.
//
// A genai program that links them still loads; calling one fails cleanly instead of aborting:
//   - a function returning OgaResult* returns oga::Unsupported (its name and what ebb offers
//     instead), after setting its handle output, if any, to nullptr;
//   - a function returning bool, size_t or a pointer returns false / 0 / nullptr and logs that
//     message once per process (oga::Log, i.e. only while genai logging is enabled);
//   - OgaDestroyX of a type ebb never creates accepts any pointer (only nullptr can come from ebb)
//     and does nothing.
// OgaSetTelemetryEnabled and the EP library (un)registration are accepted: see their comments.
#include <mutex>
#include <set>
#include <string>

#include "oga_internal.h"

namespace {

// What ebb offers instead, per family.
constexpr const char* kMedia = "ebb runs text decoders and encoders (docs/genai.md)";
constexpr const char* kProcessorText =
    "ebb runs text decoders and encoders (docs/genai.md); decode with OgaTokenizerDecode or "
    "OgaCreateTokenizerStream";
constexpr const char* kSpeculative = "ebb decodes one token per step; use OgaGenerator";
constexpr const char* kAdapters = "load a model folder with the adapter merged";
constexpr const char* kEngine =
    "use one OgaGenerator per request; ebb batches concurrent generators with "
    "decode_batch.max_rows (docs/options.md)";
constexpr const char* kProviders =
    "choose the provider with OgaConfigClearProviders/OgaConfigAppendProvider";
constexpr const char* kRuntimeSettings =
    "load with OgaCreateModel or OgaCreateModelFromConfig; choose the provider with "
    "OgaConfigClearProviders/OgaConfigAppendProvider";
constexpr const char* kPackage =
    "give OgaCreateConfig a model folder; choose the provider with "
    "OgaConfigClearProviders/OgaConfigAppendProvider";

// Sets a handle output to nullptr, so a caller that frees whatever it got back frees nothing.
template <class T>
void Clear(T** out) {
  if (out != nullptr) *out = nullptr;
}

// The unsupported result of `fn`, with its handle output cleared.
template <class T>
OgaResult* Refuse(const char* fn, const char* instead, T** out) {
  Clear(out);
  return oga::Unsupported(fn, instead);
}

// For functions that cannot return a result: logs oga::Unsupported's message, the first time
// `fn` is called in the process (these take handles ebb never creates, so a program reaching
// them has already been told by the function that would have created the handle).
void LogOnce(const char* fn, const char* instead) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>;  // never destroyed
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen->insert(fn).second) return;
  }
  OgaResult* r = oga::Unsupported(fn, instead);
  oga::Log(r->message);
  OgaDestroyResult(r);
}

}  // namespace

// ---- Telemetry

// ebb sends no telemetry, so there is nothing to switch: accepted, either way.
void OGA_API_CALL OgaSetTelemetryEnabled(bool /*enabled*/) {}

// ---- Images and audio

OgaResult* OGA_API_CALL OgaLoadImage(const char* /*image_path*/, OgaImages** images) {
  return Refuse("OgaLoadImage", kMedia, images);
}

OgaResult* OGA_API_CALL OgaLoadImages(const OgaStringArray* /*image_paths*/, OgaImages** images) {
  return Refuse("OgaLoadImages", kMedia, images);
}

OgaResult* OGA_API_CALL OgaLoadImagesFromBuffers(const void** /*image_data*/,
                                                 const size_t* /*image_data_sizes*/,
                                                 size_t /*count*/, OgaImages** images) {
  return Refuse("OgaLoadImagesFromBuffers", kMedia, images);
}

void OGA_API_CALL OgaDestroyImages(OgaImages* /*images*/) {}

OgaResult* OGA_API_CALL OgaLoadAudio(const char* /*audio_path*/, OgaAudios** audios) {
  return Refuse("OgaLoadAudio", kMedia, audios);
}

OgaResult* OGA_API_CALL OgaLoadAudios(const OgaStringArray* /*audio_paths*/, OgaAudios** audios) {
  return Refuse("OgaLoadAudios", kMedia, audios);
}

OgaResult* OGA_API_CALL OgaLoadAudiosFromBuffers(const void** /*audio_data*/,
                                                 const size_t* /*audio_data_sizes*/,
                                                 size_t /*count*/, OgaAudios** audios) {
  return Refuse("OgaLoadAudiosFromBuffers", kMedia, audios);
}

void OGA_API_CALL OgaDestroyAudios(OgaAudios* /*audios*/) {}

// ---- Runtime settings, model packages, hardware device selection

OgaResult* OGA_API_CALL OgaCreateRuntimeSettings(OgaRuntimeSettings** out) {
  return Refuse("OgaCreateRuntimeSettings", kRuntimeSettings, out);
}

void OGA_API_CALL OgaDestroyRuntimeSettings(OgaRuntimeSettings* /*settings*/) {}

OgaResult* OGA_API_CALL OgaRuntimeSettingsSetHandle(OgaRuntimeSettings* /*settings*/,
                                                    const char* /*handle_name*/, void* /*handle*/) {
  return oga::Unsupported("OgaRuntimeSettingsSetHandle", kRuntimeSettings);
}

OgaResult* OGA_API_CALL OgaCreateConfigFromPackageEp(const char* /*config_path*/,
                                                     const char* /*ep*/, OgaConfig** out) {
  return Refuse("OgaCreateConfigFromPackageEp", kPackage, out);
}

OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceType(
    OgaConfig* /*config*/, const char* /*provider*/, const char* /*hardware_device_type*/) {
  return oga::Unsupported("OgaConfigSetDecoderProviderOptionsHardwareDeviceType", kProviders);
}

OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceId(
    OgaConfig* /*config*/, const char* /*provider*/, uint32_t /*hardware_device_id*/) {
  return oga::Unsupported("OgaConfigSetDecoderProviderOptionsHardwareDeviceId", kProviders);
}

OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareVendorId(
    OgaConfig* /*config*/, const char* /*provider*/, uint32_t /*hardware_vendor_id*/) {
  return oga::Unsupported("OgaConfigSetDecoderProviderOptionsHardwareVendorId", kProviders);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceType(
    OgaConfig* /*config*/, const char* /*provider*/) {
  return oga::Unsupported("OgaConfigClearDecoderProviderOptionsHardwareDeviceType", kProviders);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceId(
    OgaConfig* /*config*/, const char* /*provider*/) {
  return oga::Unsupported("OgaConfigClearDecoderProviderOptionsHardwareDeviceId", kProviders);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareVendorId(
    OgaConfig* /*config*/, const char* /*provider*/) {
  return oga::Unsupported("OgaConfigClearDecoderProviderOptionsHardwareVendorId", kProviders);
}

OgaResult* OGA_API_CALL OgaCreateModelWithRuntimeSettings(const char* /*config_path*/,
                                                          const OgaRuntimeSettings* /*settings*/,
                                                          OgaModel** out) {
  return Refuse("OgaCreateModelWithRuntimeSettings", kRuntimeSettings, out);
}

// ---- Speculative decoding and MTP

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeNumber(OgaGeneratorParams* /*params*/,
                                                               const char* /*name*/,
                                                               double /*value*/) {
  return oga::Unsupported("OgaGeneratorParamsSetSpeculativeNumber", kSpeculative);
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeNumber(const OgaGeneratorParams* /*params*/,
                                                               const char* /*name*/,
                                                               double* /*value*/) {
  return oga::Unsupported("OgaGeneratorParamsGetSpeculativeNumber", kSpeculative);
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeBool(OgaGeneratorParams* /*params*/,
                                                             const char* /*name*/, bool /*value*/) {
  return oga::Unsupported("OgaGeneratorParamsSetSpeculativeBool", kSpeculative);
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeBool(const OgaGeneratorParams* /*params*/,
                                                             const char* /*name*/,
                                                             bool* /*value*/) {
  return oga::Unsupported("OgaGeneratorParamsGetSpeculativeBool", kSpeculative);
}

OgaResult* OGA_API_CALL OgaCreateMtpGenerator(const OgaModel* /*main_model*/,
                                              const OgaModel* /*mtp_model*/,
                                              const OgaGeneratorParams* /*params*/,
                                              OgaMtpGenerator** out) {
  return Refuse("OgaCreateMtpGenerator", kSpeculative, out);
}

OgaResult* OGA_API_CALL OgaMtpGenerator_AppendTokens(OgaMtpGenerator* /*generator*/,
                                                     const int32_t* /*input_ids*/,
                                                     size_t /*input_ids_count*/) {
  return oga::Unsupported("OgaMtpGenerator_AppendTokens", kSpeculative);
}

OgaResult* OGA_API_CALL OgaMtpGenerator_GenerateNextToken(OgaMtpGenerator* /*generator*/) {
  return oga::Unsupported("OgaMtpGenerator_GenerateNextToken", kSpeculative);
}

bool OGA_API_CALL OgaMtpGenerator_IsDone(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_IsDone", kSpeculative);
  return false;
}

size_t OGA_API_CALL OgaMtpGenerator_GetSequenceCount(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_GetSequenceCount", kSpeculative);
  return 0;
}

const int32_t* OGA_API_CALL OgaMtpGenerator_GetSequenceData(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_GetSequenceData", kSpeculative);
  return nullptr;
}

size_t OGA_API_CALL OgaMtpGenerator_GetForwardCount(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_GetForwardCount", kSpeculative);
  return 0;
}

size_t OGA_API_CALL OgaMtpGenerator_GetAcceptCount(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_GetAcceptCount", kSpeculative);
  return 0;
}

size_t OGA_API_CALL OgaMtpGenerator_GetTrialCount(const OgaMtpGenerator* /*generator*/) {
  LogOnce("OgaMtpGenerator_GetTrialCount", kSpeculative);
  return 0;
}

OgaResult* OGA_API_CALL OgaMtpGenerator_GetSpeculativeStats(const OgaMtpGenerator* /*generator*/,
                                                            OgaSpeculativeStats** out) {
  return Refuse("OgaMtpGenerator_GetSpeculativeStats", kSpeculative, out);
}

void OGA_API_CALL OgaDestroyMtpGenerator(OgaMtpGenerator* /*generator*/) {}

// Snapshots and hidden states serve genai's speculative decoders; ebb's generator rewinds with
// OgaGenerator_RewindTo.
OgaResult* OGA_API_CALL OgaGenerator_SnapshotState(OgaGenerator* /*generator*/) {
  return oga::Unsupported("OgaGenerator_SnapshotState", kSpeculative);
}

OgaResult* OGA_API_CALL OgaGenerator_SetHiddenStates(OgaGenerator* /*generator*/,
                                                     OgaTensor* /*hidden_states*/) {
  return oga::Unsupported("OgaGenerator_SetHiddenStates", kSpeculative);
}

OgaResult* OGA_API_CALL OgaGenerator_GetSpeculativeStats(const OgaGenerator* /*generator*/,
                                                         OgaSpeculativeStats** out) {
  return Refuse("OgaGenerator_GetSpeculativeStats", kSpeculative, out);
}

void OGA_API_CALL OgaDestroySpeculativeStats(OgaSpeculativeStats* /*stats*/) {}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetCount(const OgaSpeculativeStats* /*stats*/,
                                                    const char* /*name*/, uint64_t* /*value*/) {
  return oga::Unsupported("OgaSpeculativeStatsGetCount", kSpeculative);
}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetNumber(const OgaSpeculativeStats* /*stats*/,
                                                     const char* /*name*/, double* /*value*/) {
  return oga::Unsupported("OgaSpeculativeStatsGetNumber", kSpeculative);
}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetBool(const OgaSpeculativeStats* /*stats*/,
                                                   const char* /*name*/, bool* /*value*/) {
  return oga::Unsupported("OgaSpeculativeStatsGetBool", kSpeculative);
}

// ---- Multimodal processors

OgaResult* OGA_API_CALL OgaCreateMultiModalProcessor(const OgaModel* /*model*/,
                                                     OgaMultiModalProcessor** out) {
  return Refuse("OgaCreateMultiModalProcessor", kMedia, out);
}

void OGA_API_CALL OgaDestroyMultiModalProcessor(OgaMultiModalProcessor* /*processor*/) {}

OgaResult* OGA_API_CALL OgaProcessorProcessImages(const OgaMultiModalProcessor* /*processor*/,
                                                  const char* /*prompt*/,
                                                  const OgaImages* /*images*/,
                                                  OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessImages", kMedia, input_tensors);
}

OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndPrompts(
    const OgaMultiModalProcessor* /*processor*/, const OgaStringArray* /*prompts*/,
    const OgaImages* /*images*/, OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessImagesAndPrompts", kMedia, input_tensors);
}

OgaResult* OGA_API_CALL OgaProcessorProcessAudios(const OgaMultiModalProcessor* /*processor*/,
                                                  const char* /*prompt*/,
                                                  const OgaAudios* /*audios*/,
                                                  OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessAudios", kMedia, input_tensors);
}

OgaResult* OGA_API_CALL OgaProcessorProcessAudiosAndPrompts(
    const OgaMultiModalProcessor* /*processor*/, const OgaStringArray* /*prompts*/,
    const OgaAudios* /*audios*/, OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessAudiosAndPrompts", kMedia, input_tensors);
}

OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudios(
    const OgaMultiModalProcessor* /*processor*/, const char* /*prompt*/,
    const OgaImages* /*images*/, const OgaAudios* /*audios*/, OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessImagesAndAudios", kMedia, input_tensors);
}

OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudiosAndPrompts(
    const OgaMultiModalProcessor* /*processor*/, const OgaStringArray* /*prompts*/,
    const OgaImages* /*images*/, const OgaAudios* /*audios*/, OgaNamedTensors** input_tensors) {
  return Refuse("OgaProcessorProcessImagesAndAudiosAndPrompts", kMedia, input_tensors);
}

// *out_string is a string output, cleared like a handle (OgaDestroyString(nullptr) is harmless).
OgaResult* OGA_API_CALL OgaProcessorDecode(const OgaMultiModalProcessor* /*processor*/,
                                           const int32_t* /*tokens*/, size_t /*token_count*/,
                                           const char** out_string) {
  return Refuse("OgaProcessorDecode", kProcessorText, out_string);
}

OgaResult* OGA_API_CALL OgaCreateTokenizerStreamFromProcessor(
    const OgaMultiModalProcessor* /*processor*/, OgaTokenizerStream** out) {
  return Refuse("OgaCreateTokenizerStreamFromProcessor", kProcessorText, out);
}

// ---- Adapters

OgaResult* OGA_API_CALL OgaCreateAdapters(const OgaModel* /*model*/, OgaAdapters** out) {
  return Refuse("OgaCreateAdapters", kAdapters, out);
}

void OGA_API_CALL OgaDestroyAdapters(OgaAdapters* /*adapters*/) {}

OgaResult* OGA_API_CALL OgaLoadAdapter(OgaAdapters* /*adapters*/, const char* /*adapter_file_path*/,
                                       const char* /*adapter_name*/) {
  return oga::Unsupported("OgaLoadAdapter", kAdapters);
}

OgaResult* OGA_API_CALL OgaUnloadAdapter(OgaAdapters* /*adapters*/, const char* /*adapter_name*/) {
  return oga::Unsupported("OgaUnloadAdapter", kAdapters);
}

OgaResult* OGA_API_CALL OgaSetActiveAdapter(OgaGenerator* /*generator*/, OgaAdapters* /*adapters*/,
                                            const char* /*adapter_name*/) {
  return oga::Unsupported("OgaSetActiveAdapter", kAdapters);
}

// ---- Engine and requests

OgaResult* OGA_API_CALL OgaCreateEngine(OgaModel* /*model*/, OgaEngine** out) {
  return Refuse("OgaCreateEngine", kEngine, out);
}

void OGA_API_CALL OgaDestroyEngine(OgaEngine* /*engine*/) {}

OgaResult* OGA_API_CALL OgaEngineStep(OgaEngine* /*engine*/, OgaRequest** request) {
  return Refuse("OgaEngineStep", kEngine, request);
}

OgaResult* OGA_API_CALL OgaEngineHasPendingRequests(OgaEngine* /*engine*/, bool* /*out*/) {
  return oga::Unsupported("OgaEngineHasPendingRequests", kEngine);
}

OgaResult* OGA_API_CALL OgaEngineAddRequest(OgaEngine* /*engine*/, OgaRequest* /*request*/) {
  return oga::Unsupported("OgaEngineAddRequest", kEngine);
}

OgaResult* OGA_API_CALL OgaEngineRemoveRequest(OgaEngine* /*engine*/, OgaRequest* /*request*/) {
  return oga::Unsupported("OgaEngineRemoveRequest", kEngine);
}

OgaResult* OGA_API_CALL OgaCreateRequest(OgaGeneratorParams* /*params*/, OgaRequest** out) {
  return Refuse("OgaCreateRequest", kEngine, out);
}

OgaResult* OGA_API_CALL OgaRequestAddTokens(OgaRequest* /*request*/,
                                            const OgaSequences* /*tokens*/) {
  return oga::Unsupported("OgaRequestAddTokens", kEngine);
}

OgaResult* OGA_API_CALL OgaRequestContinue(OgaRequest* /*request*/,
                                           const OgaSequences* /*tokens*/) {
  return oga::Unsupported("OgaRequestContinue", kEngine);
}

void OGA_API_CALL OgaDestroyRequest(OgaRequest* /*request*/) {}

OgaResult* OGA_API_CALL OgaRequestSetOpaqueData(OgaRequest* /*request*/, void* /*opaque_data*/) {
  return oga::Unsupported("OgaRequestSetOpaqueData", kEngine);
}

OgaResult* OGA_API_CALL OgaRequestGetOpaqueData(OgaRequest* /*request*/, void** opaque_data) {
  return Refuse("OgaRequestGetOpaqueData", kEngine, opaque_data);
}

OgaResult* OGA_API_CALL OgaRequestHasUnseenTokens(const OgaRequest* /*request*/, bool* /*out*/) {
  return oga::Unsupported("OgaRequestHasUnseenTokens", kEngine);
}

OgaResult* OGA_API_CALL OgaRequestGetUnseenToken(OgaRequest* /*request*/, int32_t* /*out*/) {
  return oga::Unsupported("OgaRequestGetUnseenToken", kEngine);
}

OgaResult* OGA_API_CALL OgaRequestIsTurnComplete(const OgaRequest* /*request*/, bool* /*out*/) {
  return oga::Unsupported("OgaRequestIsTurnComplete", kEngine);
}

// ---- Execution provider libraries

// ebb runs on the ONNX Runtime it ships with and that runtime's built-in providers; a plug-in EP
// library is not loaded. genai gives these no result to fail with, so the call is logged and the
// program goes on (a provider it then appends that ORT lacks fails at model load, naming it).
void OGA_API_CALL OgaRegisterExecutionProviderLibrary(const char* registration_name,
                                                      const char* library_path) {
  oga::Log(std::string("OgaRegisterExecutionProviderLibrary: ebb uses the ONNX Runtime it ships "
                       "with and its built-in providers; \"") +
           (registration_name != nullptr ? registration_name : "") + "\" (" +
           (library_path != nullptr ? library_path : "") + ") is not loaded; " + kProviders);
}

void OGA_API_CALL OgaUnregisterExecutionProviderLibrary(const char* registration_name) {
  oga::Log(std::string("OgaUnregisterExecutionProviderLibrary: ebb uses the ONNX Runtime it "
                       "ships with and its built-in providers; \"") +
           (registration_name != nullptr ? registration_name : "") +
           "\" was never loaded, nothing to unregister");
}

// ---- Streaming processors (streaming speech recognition)

OgaResult* OGA_API_CALL OgaCreateStreamingProcessor(OgaModel* /*model*/,
                                                    OgaStreamingProcessor** out) {
  return Refuse("OgaCreateStreamingProcessor", kMedia, out);
}

OgaResult* OGA_API_CALL OgaStreamingProcessorProcess(OgaStreamingProcessor* /*processor*/,
                                                     const float* /*audio_data*/,
                                                     size_t /*num_samples*/,
                                                     OgaNamedTensors** out) {
  return Refuse("OgaStreamingProcessorProcess", kMedia, out);
}

OgaResult* OGA_API_CALL OgaStreamingProcessorFlush(OgaStreamingProcessor* /*processor*/,
                                                   OgaNamedTensors** out) {
  return Refuse("OgaStreamingProcessorFlush", kMedia, out);
}

void OGA_API_CALL OgaDestroyStreamingProcessor(OgaStreamingProcessor* /*processor*/) {}

OgaResult* OGA_API_CALL OgaStreamingProcessorSetOption(OgaStreamingProcessor* /*processor*/,
                                                       const char* /*key*/, const char* /*value*/) {
  return oga::Unsupported("OgaStreamingProcessorSetOption", kMedia);
}

OgaResult* OGA_API_CALL OgaStreamingProcessorGetOption(const OgaStreamingProcessor* /*processor*/,
                                                       const char* /*key*/, const char** value) {
  return Refuse("OgaStreamingProcessorGetOption", kMedia, value);
}
