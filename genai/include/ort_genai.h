// ort_genai.h — ebb's C++ wrapper over ort_genai_c.h.
//
// What it is: a header-only set of C++ classes over the C API that ebb's libonnxruntime-genai.so
// exports. It matches the C++ API of onnxruntime-genai 0.16 (same class names, method names,
// signatures and ownership rules), so a program written against genai's ort_genai.h compiles
// unchanged against this one and links against ebb's library. Nothing here needs to be built or
// linked separately: every function is inline and calls straight into the C API.
//
// How the classes work: an OgaX class is never constructed or copied by the program. It is a
// stand-in for the C library's opaque OgaX handle: `OgaX::Create(...)` (or `Load`) returns a
// std::unique_ptr<OgaX> holding the C handle, methods pass `this` back to the C function as that
// handle, and deleting the object (the unique_ptr going out of scope) calls OgaDestroyX through a
// class-specific operator delete. Parameters and return types are genai's, including the parts
// that exist only under C++20 (std::span overloads; OGA_USE_SPAN is 1 there).
//
// Error rule: a C call that fails returns an OgaResult; the wrapper copies its message, destroys
// the result, and throws std::runtime_error carrying that message. Calls whose C function cannot
// fail (counts, IsDone, sequence data) return the value directly.
//
// Lifetimes: strings the library allocates come back as OgaString, which frees them with
// OgaDestroyString; OgaTokenizerStream::Decode's string is the exception (owned by the stream,
// valid until its next Decode). Views (spans, raw pointers into sequences) are valid while the
// object they came from is alive and unchanged. OgaHandle calls OgaShutdown when it is destroyed.
#ifndef EBB_ORT_GENAI_H
#define EBB_ORT_GENAI_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if __cplusplus >= 202002L
#include <span>
#define OGA_USE_SPAN 1
#endif

#include "ort_genai_c.h"

// ---------------------------------------------------------------------------------------------
// Foundations

// Base of every handle class: it cannot be constructed, copied or assigned, so a handle only ever
// exists behind a pointer that the C library handed out.
struct OgaAbstract {
  OgaAbstract() = delete;
  OgaAbstract(const OgaAbstract&) = delete;
  void operator=(const OgaAbstract&) = delete;
};

// A failed call's result. GetError's text lives as long as the result does.
struct OgaResult : OgaAbstract {
  const char* GetError() const { return OgaResultGetError(this); }
  static void operator delete(void* p) { OgaDestroyResult(reinterpret_cast<OgaResult*>(p)); }
};

// Does nothing for nullptr (success). Otherwise takes ownership of `result`, destroys it, and
// throws std::runtime_error with its message (copied first, so it outlives the result).
inline void OgaCheckResult(OgaResult* result) {
  if (result == nullptr) return;
  const char* text = OgaResultGetError(result);
  std::string message = text != nullptr ? text : "onnxruntime-genai: unknown error";
  OgaDestroyResult(result);
  throw std::runtime_error(message);
}

// Owns a string the library allocated and frees it with OgaDestroyString when destroyed. Converts
// implicitly to const char*, valid while this object lives. Movable, not copyable (a copy would
// free the same string twice).
struct OgaString {
  OgaString(const char* p) : p_{p} {}
  OgaString(OgaString&& other) noexcept : p_{other.p_} { other.p_ = nullptr; }
  OgaString(const OgaString&) = delete;
  OgaString& operator=(const OgaString&) = delete;
  OgaString& operator=(OgaString&& other) noexcept {
    if (this != &other) {
      if (p_ != nullptr) OgaDestroyString(p_);
      p_ = other.p_;
      other.p_ = nullptr;
    }
    return *this;
  }
  ~OgaString() {
    if (p_ != nullptr) OgaDestroyString(p_);
  }

  operator const char*() const { return p_; }

  const char* p_;
};

// Tag types naming 16-bit float elements for OgaTypeToElementType (never defined).
struct OgaFloat16_t;
struct OgaBFloat16_t;

namespace oga_detail {
template <typename>
inline constexpr bool kUnsupportedElementType = false;

// Maps a C++ element type to its OgaElementType; a type without a mapping fails to compile.
template <typename T>
struct ElementTypeOf {
  static_assert(kUnsupportedElementType<T>, "no OgaElementType for this C++ type");
  static constexpr OgaElementType value = OgaElementType_undefined;
};
#define EBB_OGA_ELEMENT_TYPE(CppType, Enum)       \
  template <>                                     \
  struct ElementTypeOf<CppType> {                 \
    static constexpr OgaElementType value = Enum; \
  }
EBB_OGA_ELEMENT_TYPE(bool, OgaElementType_bool);
EBB_OGA_ELEMENT_TYPE(int8_t, OgaElementType_int8);
EBB_OGA_ELEMENT_TYPE(uint8_t, OgaElementType_uint8);
EBB_OGA_ELEMENT_TYPE(int16_t, OgaElementType_int16);
EBB_OGA_ELEMENT_TYPE(uint16_t, OgaElementType_uint16);
EBB_OGA_ELEMENT_TYPE(int32_t, OgaElementType_int32);
EBB_OGA_ELEMENT_TYPE(uint32_t, OgaElementType_uint32);
EBB_OGA_ELEMENT_TYPE(int64_t, OgaElementType_int64);
EBB_OGA_ELEMENT_TYPE(uint64_t, OgaElementType_uint64);
EBB_OGA_ELEMENT_TYPE(float, OgaElementType_float32);
EBB_OGA_ELEMENT_TYPE(double, OgaElementType_float64);
EBB_OGA_ELEMENT_TYPE(OgaFloat16_t, OgaElementType_float16);
EBB_OGA_ELEMENT_TYPE(OgaBFloat16_t, OgaElementType_bfloat16);
#undef EBB_OGA_ELEMENT_TYPE

// Calls a C "create" function that reports its object through a trailing out-pointer, throws on
// failure, and returns the object owned by a unique_ptr.
template <typename T, typename Fn, typename... Args>
std::unique_ptr<T> Make(Fn fn, Args... args) {
  T* out = nullptr;
  OgaCheckResult(fn(args..., &out));
  return std::unique_ptr<T>(out);
}

// Same, for C getters that report a plain value through a trailing out-pointer.
template <typename V, typename Fn, typename... Args>
V Get(Fn fn, Args... args) {
  V out{};
  OgaCheckResult(fn(args..., &out));
  return out;
}
}  // namespace oga_detail

// OgaTypeToElementType<T>: the OgaElementType of C++ element type T (bool, the fixed-width
// integers, float, double, OgaFloat16_t, OgaBFloat16_t). Programs may add specializations.
template <typename T>
inline constexpr OgaElementType OgaTypeToElementType = oga_detail::ElementTypeOf<T>::value;

// ---------------------------------------------------------------------------------------------
// Strings and tensors

// A list of strings owned by the library; Get's pointer is valid while the array is unchanged.
struct OgaStringArray : OgaAbstract {
  static std::unique_ptr<OgaStringArray> Create() {
    return oga_detail::Make<OgaStringArray>(OgaCreateStringArray);
  }
  // Copies `count` strings from `strings`.
  static std::unique_ptr<OgaStringArray> Create(const char* const* strings, size_t count) {
    return oga_detail::Make<OgaStringArray>(OgaCreateStringArrayFromStrings, strings, count);
  }

  void Add(const char* str) { OgaCheckResult(OgaStringArrayAddString(this, str)); }
  const char* Get(size_t index) const {
    return oga_detail::Get<const char*>(OgaStringArrayGetString, this, index);
  }
  size_t Count() const { return oga_detail::Get<size_t>(OgaStringArrayGetCount, this); }

  static void operator delete(void* p) {
    OgaDestroyStringArray(reinterpret_cast<OgaStringArray*>(p));
  }
};

// A tensor. Create wraps a caller-owned buffer without copying it: the buffer must outlive the
// tensor. Tensors returned by the library own their data.
struct OgaTensor : OgaAbstract {
#if OGA_USE_SPAN
  template <typename T>
  static std::unique_ptr<OgaTensor> Create(T* data, std::span<const int64_t> shape) {
    return Create(data, shape.data(), shape.size(), OgaTypeToElementType<T>);
  }
  static std::unique_ptr<OgaTensor> Create(void* data, std::span<const int64_t> shape,
                                           OgaElementType type) {
    return Create(data, shape.data(), shape.size(), type);
  }
#endif
  static std::unique_ptr<OgaTensor> Create(void* data, const int64_t* shape_dims,
                                           size_t shape_dims_count, OgaElementType element_type) {
    return oga_detail::Make<OgaTensor>(OgaCreateTensorFromBuffer, data, shape_dims,
                                       shape_dims_count, element_type);
  }

  OgaElementType Type() { return oga_detail::Get<OgaElementType>(OgaTensorGetType, this); }
  std::vector<int64_t> Shape() {
    std::vector<int64_t> dims(oga_detail::Get<size_t>(OgaTensorGetShapeRank, this));
    OgaCheckResult(OgaTensorGetShape(this, dims.data(), dims.size()));
    return dims;
  }
  // The element buffer; valid while the tensor lives.
  void* Data() { return oga_detail::Get<void*>(OgaTensorGetData, this); }

  static void operator delete(void* p) { OgaDestroyTensor(reinterpret_cast<OgaTensor*>(p)); }
};

// Tensors by name (model inputs). Get returns a new handle to the named tensor; Set stores the
// tensor under a name.
struct OgaNamedTensors : OgaAbstract {
  static std::unique_ptr<OgaNamedTensors> Create() {
    return oga_detail::Make<OgaNamedTensors>(OgaCreateNamedTensors);
  }

  std::unique_ptr<OgaTensor> Get(const char* name) {
    return oga_detail::Make<OgaTensor>(OgaNamedTensorsGet, this, name);
  }
  void Set(const char* name, OgaTensor& tensor) {
    OgaCheckResult(OgaNamedTensorsSet(this, name, &tensor));
  }
  void Delete(const char* name) { OgaCheckResult(OgaNamedTensorsDelete(this, name)); }
  size_t Count() const { return oga_detail::Get<size_t>(OgaNamedTensorsCount, this); }
  std::unique_ptr<OgaStringArray> GetNames() const {
    return oga_detail::Make<OgaStringArray>(OgaNamedTensorsGetNames, this);
  }

  static void operator delete(void* p) {
    OgaDestroyNamedTensors(reinterpret_cast<OgaNamedTensors*>(p));
  }
};

// ---------------------------------------------------------------------------------------------
// Configuration and models

// Named native handles passed to model creation.
struct OgaRuntimeSettings : OgaAbstract {
  static std::unique_ptr<OgaRuntimeSettings> Create() {
    return oga_detail::Make<OgaRuntimeSettings>(OgaCreateRuntimeSettings);
  }

  void SetHandle(const char* name, void* handle) {
    OgaCheckResult(OgaRuntimeSettingsSetHandle(this, name, handle));
  }
  void SetHandle(const std::string& name, void* handle) { SetHandle(name.c_str(), handle); }

  static void operator delete(void* p) {
    OgaDestroyRuntimeSettings(reinterpret_cast<OgaRuntimeSettings*>(p));
  }
};

// A model configuration (genai_config.json) that can be edited before creating a model from it.
struct OgaConfig : OgaAbstract {
  static std::unique_ptr<OgaConfig> Create(const char* config_path) {
    return oga_detail::Make<OgaConfig>(OgaCreateConfig, config_path);
  }
  static std::unique_ptr<OgaConfig> CreateFromPackageEp(const char* config_path, const char* ep) {
    return oga_detail::Make<OgaConfig>(OgaCreateConfigFromPackageEp, config_path, ep);
  }

  void ClearProviders() { OgaCheckResult(OgaConfigClearProviders(this)); }
  void AppendProvider(const char* provider) {
    OgaCheckResult(OgaConfigAppendProvider(this, provider));
  }
  void SetProviderOption(const char* provider, const char* name, const char* value) {
    OgaCheckResult(OgaConfigSetProviderOption(this, provider, name, value));
  }
  // Merges a JSON document into the configuration.
  void Overlay(const char* json) { OgaCheckResult(OgaConfigOverlay(this, json)); }

  // Supplies the bytes of a model file in memory; they must stay valid until the model is created.
  void AddModelData(const std::string& model_filename, const void* model_data,
                    size_t model_data_length) {
    OgaCheckResult(
        OgaConfigAddModelData(this, model_filename.c_str(), model_data, model_data_length));
  }
  void AddModelData(const std::string& model_filename, const std::vector<std::byte>& model_data) {
    AddModelData(model_filename, model_data.data(), model_data.size());
  }
#if OGA_USE_SPAN
  void AddModelData(const std::string& model_filename, std::span<const std::byte> model_data) {
    AddModelData(model_filename, model_data.data(), model_data.size());
  }
#endif
  void RemoveModelData(const std::string& model_filename) {
    OgaCheckResult(OgaConfigRemoveModelData(this, model_filename.c_str()));
  }

  void SetDecoderProviderOptionsHardwareDeviceType(const char* provider,
                                                   const char* hardware_device_type) {
    OgaCheckResult(
        OgaConfigSetDecoderProviderOptionsHardwareDeviceType(this, provider, hardware_device_type));
  }
  void SetDecoderProviderOptionsHardwareDeviceId(const char* provider,
                                                 uint32_t hardware_device_id) {
    OgaCheckResult(
        OgaConfigSetDecoderProviderOptionsHardwareDeviceId(this, provider, hardware_device_id));
  }
  void SetDecoderProviderOptionsHardwareVendorId(const char* provider,
                                                 uint32_t hardware_vendor_id) {
    OgaCheckResult(
        OgaConfigSetDecoderProviderOptionsHardwareVendorId(this, provider, hardware_vendor_id));
  }
  void ClearDecoderProviderOptionsHardwareDeviceType(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareDeviceType(this, provider));
  }
  void ClearDecoderProviderOptionsHardwareDeviceId(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareDeviceId(this, provider));
  }
  void ClearDecoderProviderOptionsHardwareVendorId(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareVendorId(this, provider));
  }

  static void operator delete(void* p) { OgaDestroyConfig(reinterpret_cast<OgaConfig*>(p)); }
};

// A loaded model. Objects created from it (tokenizer, params, generator) keep it alive.
struct OgaModel : OgaAbstract {
  // `config_path` is the model folder holding genai_config.json.
  static std::unique_ptr<OgaModel> Create(const char* config_path) {
    return oga_detail::Make<OgaModel>(OgaCreateModel, config_path);
  }
  static std::unique_ptr<OgaModel> Create(const char* config_path,
                                          const OgaRuntimeSettings& settings) {
    return oga_detail::Make<OgaModel>(OgaCreateModelWithRuntimeSettings, config_path, &settings);
  }
  static std::unique_ptr<OgaModel> Create(const OgaConfig& config) {
    return oga_detail::Make<OgaModel>(OgaCreateModelFromConfig, &config);
  }

  OgaString GetType() const { return oga_detail::Get<const char*>(OgaModelGetType, this); }
  OgaString GetDeviceType() const {
    return oga_detail::Get<const char*>(OgaModelGetDeviceType, this);
  }

  static void operator delete(void* p) { OgaDestroyModel(reinterpret_cast<OgaModel*>(p)); }
};

// ---------------------------------------------------------------------------------------------
// Token sequences and tokenizers

// A batch of token sequences. SequenceData's pointer is valid until the batch changes.
struct OgaSequences : OgaAbstract {
  static std::unique_ptr<OgaSequences> Create() {
    return oga_detail::Make<OgaSequences>(OgaCreateSequences);
  }

  // Number of sequences.
  size_t Count() const { return OgaSequencesCount(this); }
  // Number of tokens in sequence `index`.
  size_t SequenceCount(size_t index) const { return OgaSequencesGetSequenceCount(this, index); }
  const int32_t* SequenceData(size_t index) const {
    return OgaSequencesGetSequenceData(this, index);
  }

  // Adds a new sequence holding a copy of tokens[0..token_cnt).
  void Append(const int32_t* tokens, size_t token_cnt) {
    OgaCheckResult(OgaAppendTokenSequence(tokens, token_cnt, this));
  }
  // Adds one token to the end of sequence `sequence_index`.
  void Append(int32_t token, size_t sequence_index) {
    OgaCheckResult(OgaAppendTokenToSequence(token, this, sequence_index));
  }
#if OGA_USE_SPAN
  std::span<const int32_t> Get(size_t index) const {
    return {SequenceData(index), SequenceCount(index)};
  }
  void Append(std::span<const int32_t> sequence) { Append(sequence.data(), sequence.size()); }
  void Append(const std::vector<int32_t>& sequence) { Append(sequence.data(), sequence.size()); }
#endif

  static void operator delete(void* p) { OgaDestroySequences(reinterpret_cast<OgaSequences*>(p)); }
};

// A model's tokenizer. Token-id getters throw when the model defines no such token.
struct OgaTokenizer : OgaAbstract {
  static std::unique_ptr<OgaTokenizer> Create(const OgaModel& model) {
    return oga_detail::Make<OgaTokenizer>(OgaCreateTokenizer, &model);
  }

  void UpdateOptions(const char* const* keys, const char* const* values, size_t num_options) {
    OgaCheckResult(OgaUpdateTokenizerOptions(this, keys, values, num_options));
  }

  int32_t GetBosTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetBosTokenId, this);
  }
  // C++20: a view owned by the tokenizer; C++17: a copy.
#if OGA_USE_SPAN
  std::span<const int32_t> GetEosTokenIds() const {
    const int32_t* ids = nullptr;
    size_t count = 0;
    OgaCheckResult(OgaTokenizerGetEosTokenIds(this, &ids, &count));
    return {ids, count};
  }
#else
  std::vector<int32_t> GetEosTokenIds() const {
    const int32_t* ids = nullptr;
    size_t count = 0;
    OgaCheckResult(OgaTokenizerGetEosTokenIds(this, &ids, &count));
    return std::vector<int32_t>(ids, ids + count);
  }
#endif
  int32_t GetPadTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetPadTokenId, this);
  }
  // Begin/end of tool call (bot/eot) and of reasoning (bor/eor).
  int32_t GetBotTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetBotTokenId, this);
  }
  int32_t GetEotTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetEotTokenId, this);
  }
  int32_t GetBorTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetBorTokenId, this);
  }
  int32_t GetEorTokenId() const {
    return oga_detail::Get<int32_t>(OgaTokenizerGetEorTokenId, this);
  }

  // Appends the tokens of `str` to `sequences` as a new sequence.
  void Encode(const char* str, OgaSequences& sequences) const {
    OgaCheckResult(OgaTokenizerEncode(this, str, &sequences));
  }
  // Encodes `count` strings into one padded [count, length] int32 tensor.
  std::unique_ptr<OgaTensor> EncodeBatch(const char** strings, size_t count) const {
    return oga_detail::Make<OgaTensor>(OgaTokenizerEncodeBatch, this, strings, count);
  }
  int32_t ToTokenId(const char* str) const {
    return oga_detail::Get<int32_t>(OgaTokenizerToTokenId, this, str);
  }

  OgaString Decode(const int32_t* tokens_data, size_t tokens_length) const {
    return oga_detail::Get<const char*>(OgaTokenizerDecode, this, tokens_data, tokens_length);
  }
#if OGA_USE_SPAN
  OgaString Decode(std::span<const int32_t> tokens) const {
    return Decode(tokens.data(), tokens.size());
  }
#endif
  // Decodes each row of a [batch, length] token tensor.
  std::unique_ptr<OgaStringArray> DecodeBatch(const OgaTensor& tensor) const {
    return oga_detail::Make<OgaStringArray>(OgaTokenizerDecodeBatch, this, &tensor);
  }

  // Renders `messages` (JSON) with `template_str`, or the model's own template when null.
  OgaString ApplyChatTemplate(const char* template_str, const char* messages, const char* tools,
                              bool add_generation_prompt) const {
    return oga_detail::Get<const char*>(OgaTokenizerApplyChatTemplate, this, template_str, messages,
                                        tools, add_generation_prompt);
  }
  // As ApplyChatTemplate, plus extra template variables as a JSON object in `template_kwargs`.
  OgaString ApplyChatTemplateWithOptions(const char* template_str, const char* messages,
                                         const char* tools, const char* template_kwargs,
                                         bool add_generation_prompt) const {
    return oga_detail::Get<const char*>(OgaTokenizerApplyChatTemplateWithOptions, this,
                                        template_str, messages, tools, template_kwargs,
                                        add_generation_prompt);
  }

  static void operator delete(void* p) { OgaDestroyTokenizer(reinterpret_cast<OgaTokenizer*>(p)); }
};

// ---------------------------------------------------------------------------------------------
// Multimodal inputs (declared for compatibility; ebb's library reports these as unsupported)

struct OgaImages : OgaAbstract {
  static std::unique_ptr<OgaImages> Load(const std::vector<const char*>& image_paths) {
    auto paths = OgaStringArray::Create(image_paths.data(), image_paths.size());
    return oga_detail::Make<OgaImages>(OgaLoadImages, paths.get());
  }
#if OGA_USE_SPAN
  static std::unique_ptr<OgaImages> Load(std::span<const char* const> image_paths) {
    auto paths = OgaStringArray::Create(image_paths.data(), image_paths.size());
    return oga_detail::Make<OgaImages>(OgaLoadImages, paths.get());
  }
#endif
  // `count` encoded images in memory, image_data[i] being image_data_sizes[i] bytes.
  static std::unique_ptr<OgaImages> Load(const void** image_data, const size_t* image_data_sizes,
                                         size_t count) {
    return oga_detail::Make<OgaImages>(OgaLoadImagesFromBuffers, image_data, image_data_sizes,
                                       count);
  }

  static void operator delete(void* p) { OgaDestroyImages(reinterpret_cast<OgaImages*>(p)); }
};

struct OgaAudios : OgaAbstract {
  static std::unique_ptr<OgaAudios> Load(const std::vector<const char*>& audio_paths) {
    auto paths = OgaStringArray::Create(audio_paths.data(), audio_paths.size());
    return oga_detail::Make<OgaAudios>(OgaLoadAudios, paths.get());
  }
#if OGA_USE_SPAN
  static std::unique_ptr<OgaAudios> Load(std::span<const char* const> audio_paths) {
    auto paths = OgaStringArray::Create(audio_paths.data(), audio_paths.size());
    return oga_detail::Make<OgaAudios>(OgaLoadAudios, paths.get());
  }
#endif
  static std::unique_ptr<OgaAudios> Load(const void** audio_data, const size_t* audio_data_sizes,
                                         size_t count) {
    return oga_detail::Make<OgaAudios>(OgaLoadAudiosFromBuffers, audio_data, audio_data_sizes,
                                       count);
  }

  static void operator delete(void* p) { OgaDestroyAudios(reinterpret_cast<OgaAudios*>(p)); }
};

// Turns prompts plus images and/or audio into model inputs. A null images/audios pointer means
// none; the vector overloads take one prompt per batch entry.
struct OgaMultiModalProcessor : OgaAbstract {
  static std::unique_ptr<OgaMultiModalProcessor> Create(const OgaModel& model) {
    return oga_detail::Make<OgaMultiModalProcessor>(OgaCreateMultiModalProcessor, &model);
  }

  std::unique_ptr<OgaNamedTensors> ProcessImages(const char* prompt,
                                                 const OgaImages* images = nullptr) const {
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessImages, this, prompt, images);
  }
  std::unique_ptr<OgaNamedTensors> ProcessImages(const std::vector<const char*>& prompts,
                                                 const OgaImages* images = nullptr) const {
    auto list = OgaStringArray::Create(prompts.data(), prompts.size());
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessImagesAndPrompts, this, list.get(),
                                             images);
  }
  std::unique_ptr<OgaNamedTensors> ProcessAudios(const char* prompt,
                                                 const OgaAudios* audios = nullptr) const {
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessAudios, this, prompt, audios);
  }
  std::unique_ptr<OgaNamedTensors> ProcessAudios(const std::vector<const char*>& prompts,
                                                 const OgaAudios* audios = nullptr) const {
    auto list = OgaStringArray::Create(prompts.data(), prompts.size());
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessAudiosAndPrompts, this, list.get(),
                                             audios);
  }
  std::unique_ptr<OgaNamedTensors> ProcessImagesAndAudios(const char* prompt,
                                                          const OgaImages* images = nullptr,
                                                          const OgaAudios* audios = nullptr) const {
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessImagesAndAudios, this, prompt,
                                             images, audios);
  }
  std::unique_ptr<OgaNamedTensors> ProcessImagesAndAudios(const std::vector<const char*>& prompts,
                                                          const OgaImages* images = nullptr,
                                                          const OgaAudios* audios = nullptr) const {
    auto list = OgaStringArray::Create(prompts.data(), prompts.size());
    return oga_detail::Make<OgaNamedTensors>(OgaProcessorProcessImagesAndAudiosAndPrompts, this,
                                             list.get(), images, audios);
  }

  OgaString Decode(const int32_t* tokens_data, size_t tokens_length) const {
    return oga_detail::Get<const char*>(OgaProcessorDecode, this, tokens_data, tokens_length);
  }
#if OGA_USE_SPAN
  OgaString Decode(std::span<const int32_t> tokens) const {
    return Decode(tokens.data(), tokens.size());
  }
#endif

  static void operator delete(void* p) {
    OgaDestroyMultiModalProcessor(reinterpret_cast<OgaMultiModalProcessor*>(p));
  }
};

// Incremental detokenizer: feed tokens one at a time, get text as it becomes complete.
struct OgaTokenizerStream : OgaAbstract {
  static std::unique_ptr<OgaTokenizerStream> Create(const OgaTokenizer& tokenizer) {
    return oga_detail::Make<OgaTokenizerStream>(OgaCreateTokenizerStream, &tokenizer);
  }
  static std::unique_ptr<OgaTokenizerStream> Create(const OgaMultiModalProcessor& processor) {
    return oga_detail::Make<OgaTokenizerStream>(OgaCreateTokenizerStreamFromProcessor, &processor);
  }

  // Returns the text completed by `token` (possibly ""). The string belongs to the stream and is
  // valid only until the next Decode or the stream's destruction; the caller concatenates chunks.
  const char* Decode(int32_t token) {
    return oga_detail::Get<const char*>(OgaTokenizerStreamDecode, this, token);
  }

  static void operator delete(void* p) {
    OgaDestroyTokenizerStream(reinterpret_cast<OgaTokenizerStream*>(p));
  }
};

// ---------------------------------------------------------------------------------------------
// Generation

// Search options (max_length, do_sample, top_k, top_p, temperature, ...) for generators.
struct OgaGeneratorParams : OgaAbstract {
  static std::unique_ptr<OgaGeneratorParams> Create(const OgaModel& model) {
    return oga_detail::Make<OgaGeneratorParams>(OgaCreateGeneratorParams, &model);
  }

  void SetSearchOption(const char* name, double value) {
    OgaCheckResult(OgaGeneratorParamsSetSearchNumber(this, name, value));
  }
  void SetSearchOptionBool(const char* name, bool value) {
    OgaCheckResult(OgaGeneratorParamsSetSearchBool(this, name, value));
  }
  double GetSearchNumber(const char* name) const {
    return oga_detail::Get<double>(OgaGeneratorParamsGetSearchNumber, this, name);
  }
  bool GetSearchBool(const char* name) const {
    return oga_detail::Get<bool>(OgaGeneratorParamsGetSearchBool, this, name);
  }
  // Constrained decoding: `type` names the grammar kind ("json_schema", "regex", "lark_grammar"),
  // `data` the grammar itself.
  void SetGuidance(const char* type, const char* data, bool enable_ff_tokens = false) {
    OgaCheckResult(OgaGeneratorParamsSetGuidance(this, type, data, enable_ff_tokens));
  }

  void SetSpeculativeNumber(const char* name, double value) {
    OgaCheckResult(OgaGeneratorParamsSetSpeculativeNumber(this, name, value));
  }
  double GetSpeculativeNumber(const char* name) const {
    return oga_detail::Get<double>(OgaGeneratorParamsGetSpeculativeNumber, this, name);
  }
  void SetSpeculativeBool(const char* name, bool value) {
    OgaCheckResult(OgaGeneratorParamsSetSpeculativeBool(this, name, value));
  }
  bool GetSpeculativeBool(const char* name) const {
    return oga_detail::Get<bool>(OgaGeneratorParamsGetSpeculativeBool, this, name);
  }

  static void operator delete(void* p) {
    OgaDestroyGeneratorParams(reinterpret_cast<OgaGeneratorParams*>(p));
  }
};

// Counters and figures of a speculative-decoding run, looked up by name.
struct OgaSpeculativeStats : OgaAbstract {
  uint64_t GetCount(const char* name) const {
    return oga_detail::Get<uint64_t>(OgaSpeculativeStatsGetCount, this, name);
  }
  double GetNumber(const char* name) const {
    return oga_detail::Get<double>(OgaSpeculativeStatsGetNumber, this, name);
  }
  bool GetBool(const char* name) const {
    return oga_detail::Get<bool>(OgaSpeculativeStatsGetBool, this, name);
  }

  static void operator delete(void* p) {
    OgaDestroySpeculativeStats(reinterpret_cast<OgaSpeculativeStats*>(p));
  }
};

// LoRA adapters loaded for a model and activated per generator.
struct OgaAdapters : OgaAbstract {
  static std::unique_ptr<OgaAdapters> Create(const OgaModel& model) {
    return oga_detail::Make<OgaAdapters>(OgaCreateAdapters, &model);
  }

  void LoadAdapter(const char* adapter_file_path, const char* adapter_name) {
    OgaCheckResult(OgaLoadAdapter(this, adapter_file_path, adapter_name));
  }
  void UnloadAdapter(const char* adapter_name) {
    OgaCheckResult(OgaUnloadAdapter(this, adapter_name));
  }

  static void operator delete(void* p) { OgaDestroyAdapters(reinterpret_cast<OgaAdapters*>(p)); }
};

// One generation: append tokens, then GenerateNextToken until IsDone. Sequence pointers and spans
// are valid until the next call that changes the generator.
struct OgaGenerator : OgaAbstract {
  static std::unique_ptr<OgaGenerator> Create(const OgaModel& model, OgaGeneratorParams& params) {
    return oga_detail::Make<OgaGenerator>(OgaCreateGenerator, &model, &params);
  }

  // True once every sequence has finished (end token or max_length).
  bool IsDone() { return OgaGenerator_IsDone(this); }
  // True after SetRuntimeOption("terminate_session", "1").
  bool IsSessionTerminated() const { return OgaGenerator_IsSessionTerminated(this); }

  void SetModelInput(const char* name, OgaTensor& tensor) {
    OgaCheckResult(OgaGenerator_SetModelInput(this, name, &tensor));
  }
  void SetInputs(OgaNamedTensors& named_tensors) {
    OgaCheckResult(OgaGenerator_SetInputs(this, &named_tensors));
  }

  void AppendTokenSequences(const OgaSequences& sequences) {
    OgaCheckResult(OgaGenerator_AppendTokenSequences(this, &sequences));
  }
  void AppendTokens(const int32_t* input_ids, size_t input_ids_count) {
    OgaCheckResult(OgaGenerator_AppendTokens(this, input_ids, input_ids_count));
  }
#if OGA_USE_SPAN
  void AppendTokens(std::span<const int32_t> input_ids) {
    AppendTokens(input_ids.data(), input_ids.size());
  }
#endif

  // Tokens in the sequence so far (prompt plus generated).
  size_t TokenCount() const { return OgaGenerator_TokenCount(this); }
  void GenerateNextToken() { OgaCheckResult(OgaGenerator_GenerateNextToken(this)); }

  // The token chosen for each sequence by the last GenerateNextToken. C++20: a view owned by the
  // generator; C++17: a copy.
#if OGA_USE_SPAN
  std::span<const int32_t> GetNextTokens() {
    const int32_t* tokens = nullptr;
    size_t count = 0;
    OgaCheckResult(OgaGenerator_GetNextTokens(this, &tokens, &count));
    return {tokens, count};
  }
#else
  std::vector<int32_t> GetNextTokens() {
    const int32_t* tokens = nullptr;
    size_t count = 0;
    OgaCheckResult(OgaGenerator_GetNextTokens(this, &tokens, &count));
    return std::vector<int32_t>(tokens, tokens + count);
  }
#endif

  // Truncates the sequence to `new_length` tokens (and the cached state with it).
  void RewindTo(size_t new_length) { OgaCheckResult(OgaGenerator_RewindTo(this, new_length)); }
  void SnapshotState() { OgaCheckResult(OgaGenerator_SnapshotState(this)); }
  void SetHiddenStates(OgaTensor& hidden_states) {
    OgaCheckResult(OgaGenerator_SetHiddenStates(this, &hidden_states));
  }
  void SetRuntimeOption(const char* key, const char* value) {
    OgaCheckResult(OgaGenerator_SetRuntimeOption(this, key, value));
  }

  size_t GetSequenceCount(size_t index) const { return OgaGenerator_GetSequenceCount(this, index); }
  const int32_t* GetSequenceData(size_t index) const {
    return OgaGenerator_GetSequenceData(this, index);
  }
#if OGA_USE_SPAN
  std::span<const int32_t> GetSequence(size_t index) const {
    return {GetSequenceData(index), GetSequenceCount(index)};
  }
#endif

  std::unique_ptr<OgaSpeculativeStats> GetSpeculativeStats() const {
    return oga_detail::Make<OgaSpeculativeStats>(OgaGenerator_GetSpeculativeStats, this);
  }

  // Copies of a model input, a model output from the last step, and the last step's logits.
  std::unique_ptr<OgaTensor> GetInput(const char* name) {
    return oga_detail::Make<OgaTensor>(OgaGenerator_GetInput, this, name);
  }
  std::unique_ptr<OgaTensor> GetOutput(const char* name) {
    return oga_detail::Make<OgaTensor>(OgaGenerator_GetOutput, this, name);
  }
  std::unique_ptr<OgaTensor> GetLogits() {
    return oga_detail::Make<OgaTensor>(OgaGenerator_GetLogits, this);
  }
  // Replaces the logits the next token is chosen from.
  void SetLogits(OgaTensor& tensor) { OgaCheckResult(OgaGenerator_SetLogits(this, &tensor)); }

  void SetActiveAdapter(OgaAdapters& adapters, const char* adapter_name) {
    OgaCheckResult(OgaSetActiveAdapter(this, &adapters, adapter_name));
  }

  static void operator delete(void* p) { OgaDestroyGenerator(reinterpret_cast<OgaGenerator*>(p)); }
};

// Generation with a multi-token-prediction draft model beside the main model (one sequence).
struct OgaMtpGenerator : OgaAbstract {
  static std::unique_ptr<OgaMtpGenerator> Create(const OgaModel& main_model,
                                                 const OgaModel& mtp_model,
                                                 OgaGeneratorParams& params) {
    return oga_detail::Make<OgaMtpGenerator>(OgaCreateMtpGenerator, &main_model, &mtp_model,
                                             &params);
  }

  void AppendTokens(const int32_t* input_ids, size_t input_ids_count) {
    OgaCheckResult(OgaMtpGenerator_AppendTokens(this, input_ids, input_ids_count));
  }
  void GenerateNextToken() { OgaCheckResult(OgaMtpGenerator_GenerateNextToken(this)); }
  bool IsDone() const { return OgaMtpGenerator_IsDone(this); }

  size_t GetSequenceCount() const { return OgaMtpGenerator_GetSequenceCount(this); }
  const int32_t* GetSequenceData() const { return OgaMtpGenerator_GetSequenceData(this); }

  size_t GetForwardCount() const { return OgaMtpGenerator_GetForwardCount(this); }
  size_t GetAcceptCount() const { return OgaMtpGenerator_GetAcceptCount(this); }
  size_t GetTrialCount() const { return OgaMtpGenerator_GetTrialCount(this); }
  std::unique_ptr<OgaSpeculativeStats> GetSpeculativeStats() const {
    return oga_detail::Make<OgaSpeculativeStats>(OgaMtpGenerator_GetSpeculativeStats, this);
  }

  static void operator delete(void* p) {
    OgaDestroyMtpGenerator(reinterpret_cast<OgaMtpGenerator*>(p));
  }
};

// ---------------------------------------------------------------------------------------------
// Continuous batching: requests stepped together by an engine

// One conversation submitted to an OgaEngine.
struct OgaRequest : OgaAbstract {
  static std::unique_ptr<OgaRequest> Create(OgaGeneratorParams& params) {
    return oga_detail::Make<OgaRequest>(OgaCreateRequest, &params);
  }

  // Prompt tokens for the first turn; Continue adds the tokens of a following turn.
  void AddTokens(const OgaSequences& tokens) { OgaCheckResult(OgaRequestAddTokens(this, &tokens)); }
  void Continue(const OgaSequences& tokens) { OgaCheckResult(OgaRequestContinue(this, &tokens)); }

  bool IsTurnComplete() const { return oga_detail::Get<bool>(OgaRequestIsTurnComplete, this); }
  bool HasUnseenTokens() const { return oga_detail::Get<bool>(OgaRequestHasUnseenTokens, this); }
  // Takes the oldest generated token the caller has not yet read.
  int32_t GetUnseenToken() { return oga_detail::Get<int32_t>(OgaRequestGetUnseenToken, this); }

  // A caller-owned pointer stored with the request and handed back unchanged.
  void SetOpaqueData(void* data) { OgaCheckResult(OgaRequestSetOpaqueData(this, data)); }
  void* GetOpaqueData() { return oga_detail::Get<void*>(OgaRequestGetOpaqueData, this); }

  static void operator delete(void* p) { OgaDestroyRequest(reinterpret_cast<OgaRequest*>(p)); }
};

// Runs many requests over one model. The engine holds its own reference to an added request until
// Remove (immediate) or until the caller's last handle is gone (reclaimed on a later Add/Step).
struct OgaEngine : OgaAbstract {
  static std::unique_ptr<OgaEngine> Create(OgaModel& model) {
    return oga_detail::Make<OgaEngine>(OgaCreateEngine, &model);
  }

  bool HasPendingRequests() { return oga_detail::Get<bool>(OgaEngineHasPendingRequests, this); }
  void Add(OgaRequest& request) { OgaCheckResult(OgaEngineAddRequest(this, &request)); }
  // Removing a request that is already gone is a successful no-op.
  void Remove(OgaRequest& request) { OgaCheckResult(OgaEngineRemoveRequest(this, &request)); }
  // Runs one step; returns a handle to a request that made progress, or nullptr when none did.
  std::unique_ptr<OgaRequest> Step() { return oga_detail::Make<OgaRequest>(OgaEngineStep, this); }

  static void operator delete(void* p) { OgaDestroyEngine(reinterpret_cast<OgaEngine*>(p)); }
};

// ---------------------------------------------------------------------------------------------
// Streaming audio input

// Feeds raw audio in chunks and yields model inputs as enough audio accumulates.
struct OgaStreamingProcessor : OgaAbstract {
  static std::unique_ptr<OgaStreamingProcessor> Create(OgaModel& model) {
    return oga_detail::Make<OgaStreamingProcessor>(OgaCreateStreamingProcessor, &model);
  }

  // Returns nullptr while there is not yet enough audio for an input.
  std::unique_ptr<OgaNamedTensors> Process(const float* audio_data, size_t num_samples) {
    return oga_detail::Make<OgaNamedTensors>(OgaStreamingProcessorProcess, this, audio_data,
                                             num_samples);
  }
  // Emits whatever audio remains buffered.
  std::unique_ptr<OgaNamedTensors> Flush() {
    return oga_detail::Make<OgaNamedTensors>(OgaStreamingProcessorFlush, this);
  }
  void SetOption(const char* key, const char* value) {
    OgaCheckResult(OgaStreamingProcessorSetOption(this, key, value));
  }
  OgaString GetOption(const char* key) const {
    return oga_detail::Get<const char*>(OgaStreamingProcessorGetOption, this, key);
  }

  static void operator delete(void* p) {
    OgaDestroyStreamingProcessor(reinterpret_cast<OgaStreamingProcessor*>(p));
  }
};

// ---------------------------------------------------------------------------------------------
// Process-wide

// Calls OgaShutdown when destroyed, so the library's global state is torn down in a known order
// rather than during static destruction. Create one near the start of main, outliving every other
// Oga object; the library cannot be used again after shutdown, so keep exactly one per process.
struct OgaHandle {
  OgaHandle() = default;
  OgaHandle(const OgaHandle&) = delete;
  OgaHandle& operator=(const OgaHandle&) = delete;
  ~OgaHandle() noexcept { OgaShutdown(); }
};

// Free functions over the library's global settings.
namespace Oga {

inline void SetLogBool(const char* name, bool value) { OgaCheckResult(OgaSetLogBool(name, value)); }
inline void SetLogString(const char* name, const char* value) {
  OgaCheckResult(OgaSetLogString(name, value));
}
// `callback` receives each log line (not NUL-terminated; `length` bytes); nullptr restores the
// default sink.
inline void SetLogCallback(void (*callback)(const char* string, size_t length)) {
  OgaCheckResult(OgaSetLogCallback(callback));
}
inline void SetCurrentGpuDeviceId(int device_id) {
  OgaCheckResult(OgaSetCurrentGpuDeviceId(device_id));
}
inline int GetCurrentGpuDeviceId() { return oga_detail::Get<int>(OgaGetCurrentGpuDeviceId); }
inline void SetTelemetryEnabled(bool enabled) { OgaSetTelemetryEnabled(enabled); }

}  // namespace Oga

#endif  // EBB_ORT_GENAI_H
