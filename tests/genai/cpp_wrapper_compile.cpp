// Source compatibility of genai's C++ API (ort_genai.h):
//   cpp_wrapper_compile [MODEL_DIR]
//
// The same source must compile against ebb's header (genai/include) and against genai's own
// headers (../shared/genai), as C++17 and as C++20; that is the proof that a genai C++ program
// builds unchanged against ebb. ExerciseEverything names every class and method of the wrapper
// (each overload, the C++20 std::span ones when OGA_USE_SPAN is set); it only runs when given
// more than 99 arguments, so it just has to compile and link. With MODEL_DIR, main runs the
// README's seed loop (greedy, 64 tokens) and prints the decoded text; without it, exits 0.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ort_genai.h"

namespace {

// Element-type mapping: evaluated at compile time.
static_assert(OgaTypeToElementType<bool> == OgaElementType_bool, "bool");
static_assert(OgaTypeToElementType<int8_t> == OgaElementType_int8, "int8");
static_assert(OgaTypeToElementType<uint8_t> == OgaElementType_uint8, "uint8");
static_assert(OgaTypeToElementType<int16_t> == OgaElementType_int16, "int16");
static_assert(OgaTypeToElementType<uint16_t> == OgaElementType_uint16, "uint16");
static_assert(OgaTypeToElementType<int32_t> == OgaElementType_int32, "int32");
static_assert(OgaTypeToElementType<uint32_t> == OgaElementType_uint32, "uint32");
static_assert(OgaTypeToElementType<int64_t> == OgaElementType_int64, "int64");
static_assert(OgaTypeToElementType<uint64_t> == OgaElementType_uint64, "uint64");
static_assert(OgaTypeToElementType<float> == OgaElementType_float32, "float");
static_assert(OgaTypeToElementType<double> == OgaElementType_float64, "double");
static_assert(OgaTypeToElementType<OgaFloat16_t> == OgaElementType_float16, "float16");
static_assert(OgaTypeToElementType<OgaBFloat16_t> == OgaElementType_bfloat16, "bfloat16");

void LogSink(const char* text, size_t length) { std::fwrite(text, 1, length, stderr); }

// Touches every method; the values are placeholders (never run against a real model).
void ExerciseEverything(const char* path) {
  OgaHandle handle;

  // Results and strings.
  OgaCheckResult(nullptr);
  std::unique_ptr<OgaResult> result{OgaSetLogBool("enabled", false)};
  if (result) std::puts(result->GetError());

  // Process-wide settings.
  Oga::SetLogBool("enabled", true);
  Oga::SetLogString("filename", "log.txt");
  Oga::SetLogCallback(LogSink);
  Oga::SetLogCallback(nullptr);
  Oga::SetCurrentGpuDeviceId(0);
  int device_id = Oga::GetCurrentGpuDeviceId();
  Oga::SetTelemetryEnabled(false);

  // String arrays.
  const char* words[] = {"a", "b"};
  auto strings = OgaStringArray::Create();
  strings->Add("c");
  auto strings2 = OgaStringArray::Create(words, 2);
  size_t string_count = strings2->Count();
  const char* first_string = strings2->Get(0);

  // Runtime settings, configs, models.
  auto settings = OgaRuntimeSettings::Create();
  settings->SetHandle("dml_device", nullptr);
  settings->SetHandle(std::string("dml_command_queue"), nullptr);
  auto config = OgaConfig::Create(path);
  auto package_config = OgaConfig::CreateFromPackageEp(path, "cpu");
  config->ClearProviders();
  config->AppendProvider("cuda");
  config->SetProviderOption("cuda", "enable_cuda_graph", "0");
  config->Overlay(R"({"search": {"max_length": 32}})");
  std::vector<std::byte> bytes(4);
  config->AddModelData("model.onnx", bytes.data(), bytes.size());
  config->AddModelData("model.onnx", bytes);
#if OGA_USE_SPAN
  config->AddModelData("model.onnx", std::span<const std::byte>(bytes));
#endif
  config->RemoveModelData("model.onnx");
  config->SetDecoderProviderOptionsHardwareDeviceType("cuda", "gpu");
  config->SetDecoderProviderOptionsHardwareDeviceId("cuda", 0);
  config->SetDecoderProviderOptionsHardwareVendorId("cuda", 0x10de);
  config->ClearDecoderProviderOptionsHardwareDeviceType("cuda");
  config->ClearDecoderProviderOptionsHardwareDeviceId("cuda");
  config->ClearDecoderProviderOptionsHardwareVendorId("cuda");
  auto model = OgaModel::Create(path);
  auto model2 = OgaModel::Create(path, *settings);
  auto model3 = OgaModel::Create(*config);
  OgaString model_type = model->GetType();
  OgaString device_type = model->GetDeviceType();
  std::printf("%s %s\n", static_cast<const char*>(model_type), device_type.p_);

  // Sequences.
  const int32_t prompt[] = {1, 2, 3};
  auto sequences = OgaSequences::Create();
  sequences->Append(prompt, 3);
  sequences->Append(4, 0);
  size_t sequence_total = sequences->Count() + sequences->SequenceCount(0);
  const int32_t* sequence_data = sequences->SequenceData(0);
#if OGA_USE_SPAN
  sequences->Append(std::span<const int32_t>(prompt));
  sequences->Append(std::vector<int32_t>{5, 6});
  std::span<const int32_t> sequence_view = sequences->Get(0);
#endif

  // Tokenizer.
  auto tokenizer = OgaTokenizer::Create(*model);
  const char* keys[] = {"add_special_tokens"};
  const char* values[] = {"false"};
  tokenizer->UpdateOptions(keys, values, 1);
  int32_t ids = tokenizer->GetBosTokenId() + tokenizer->GetPadTokenId() +
                tokenizer->GetBotTokenId() + tokenizer->GetEotTokenId() +
                tokenizer->GetBorTokenId() + tokenizer->GetEorTokenId() +
                tokenizer->ToTokenId("hello");
  auto eos_ids = tokenizer->GetEosTokenIds();
  ids += static_cast<int32_t>(eos_ids.size());
  tokenizer->Encode("hello", *sequences);
  const char* batch[] = {"one", "two"};
  std::unique_ptr<OgaTensor> encoded = tokenizer->EncodeBatch(batch, 2);
  std::unique_ptr<OgaStringArray> decoded_batch = tokenizer->DecodeBatch(*encoded);
  OgaString decoded = tokenizer->Decode(prompt, 3);
  OgaString chat =
      tokenizer->ApplyChatTemplate(nullptr, R"([{"role":"user","content":"hi"}])", nullptr, true);
  OgaString chat2 =
      tokenizer->ApplyChatTemplateWithOptions(nullptr, "[]", nullptr, R"({"x": 1})", false);
#if OGA_USE_SPAN
  OgaString decoded_span = tokenizer->Decode(std::span<const int32_t>(prompt));
#endif
  auto stream = OgaTokenizerStream::Create(*tokenizer);
  const char* piece = stream->Decode(42);

  // Generator params.
  auto params = OgaGeneratorParams::Create(*model);
  params->SetSearchOption("max_length", 64);
  params->SetSearchOptionBool("do_sample", false);
  params->SetGuidance("regex", "[a-z]+");
  params->SetGuidance("json_schema", "{}", true);
  double numbers = params->GetSearchNumber("max_length");
  bool flags = params->GetSearchBool("do_sample");
  params->SetSpeculativeNumber("num_draft_tokens", 4);
  numbers += params->GetSpeculativeNumber("num_draft_tokens");
  params->SetSpeculativeBool("enabled", true);
  flags = flags || params->GetSpeculativeBool("enabled");

  // Tensors and named tensors.
  std::vector<float> buffer(6);
  const int64_t shape[] = {2, 3};
  auto tensor = OgaTensor::Create(buffer.data(), shape, 2, OgaElementType_float32);
#if OGA_USE_SPAN
  auto tensor2 = OgaTensor::Create(buffer.data(), std::span<const int64_t>(shape));
  auto tensor3 = OgaTensor::Create(static_cast<void*>(buffer.data()),
                                   std::span<const int64_t>(shape), OgaElementType_float32);
#endif
  OgaElementType type = tensor->Type();
  std::vector<int64_t> dims = tensor->Shape();
  void* data = tensor->Data();
  auto named = OgaNamedTensors::Create();
  named->Set("input_ids", *tensor);
  std::unique_ptr<OgaTensor> got = named->Get("input_ids");
  size_t named_count = named->Count();
  std::unique_ptr<OgaStringArray> names = named->GetNames();
  named->Delete("input_ids");

  // Generator.
  auto adapters = OgaAdapters::Create(*model);
  adapters->LoadAdapter("adapter.onnx_adapter", "a");
  auto generator = OgaGenerator::Create(*model, *params);
  generator->SetModelInput("pixel_values", *tensor);
  generator->SetInputs(*named);
  generator->AppendTokenSequences(*sequences);
  generator->AppendTokens(prompt, 3);
#if OGA_USE_SPAN
  generator->AppendTokens(std::span<const int32_t>(prompt));
  std::span<const int32_t> whole = generator->GetSequence(0);
#endif
  size_t token_count = generator->TokenCount();
  while (!generator->IsDone()) generator->GenerateNextToken();
  auto next_tokens = generator->GetNextTokens();
  flags = flags || generator->IsSessionTerminated();
  generator->RewindTo(1);
  generator->SnapshotState();
  generator->SetHiddenStates(*tensor);
  generator->SetRuntimeOption("terminate_session", "0");
  size_t generated = generator->GetSequenceCount(0);
  const int32_t* generated_data = generator->GetSequenceData(0);
  std::unique_ptr<OgaSpeculativeStats> stats = generator->GetSpeculativeStats();
  uint64_t accepted = stats->GetCount("accepted");
  numbers += stats->GetNumber("acceptance_rate");
  flags = flags || stats->GetBool("enabled");
  std::unique_ptr<OgaTensor> input = generator->GetInput("input_ids");
  std::unique_ptr<OgaTensor> output = generator->GetOutput("logits");
  std::unique_ptr<OgaTensor> logits = generator->GetLogits();
  generator->SetLogits(*logits);
  generator->SetActiveAdapter(*adapters, "a");
  adapters->UnloadAdapter("a");

  // MTP generator.
  auto mtp = OgaMtpGenerator::Create(*model, *model2, *params);
  mtp->AppendTokens(prompt, 3);
  while (!mtp->IsDone()) mtp->GenerateNextToken();
  size_t mtp_counts = mtp->GetSequenceCount() + mtp->GetForwardCount() + mtp->GetAcceptCount() +
                      mtp->GetTrialCount();
  const int32_t* mtp_data = mtp->GetSequenceData();
  std::unique_ptr<OgaSpeculativeStats> mtp_stats = mtp->GetSpeculativeStats();

  // Images, audio, multimodal processor.
  std::vector<const char*> files = {"a.png"};
  const void* blobs[] = {bytes.data()};
  const size_t blob_sizes[] = {bytes.size()};
  auto images = OgaImages::Load(files);
  auto images2 = OgaImages::Load(blobs, blob_sizes, 1);
  auto audios = OgaAudios::Load(files);
  auto audios2 = OgaAudios::Load(blobs, blob_sizes, 1);
#if OGA_USE_SPAN
  auto images3 = OgaImages::Load(std::span<const char* const>(files));
  auto audios3 = OgaAudios::Load(std::span<const char* const>(files));
#endif
  auto processor = OgaMultiModalProcessor::Create(*model);
  std::vector<const char*> prompts = {"<|image_1|> describe", "<|audio_1|> transcribe"};
  auto in1 = processor->ProcessImages("<|image_1|>", images.get());
  auto in2 = processor->ProcessImages("no image");
  auto in3 = processor->ProcessImages(prompts, images.get());
  auto in4 = processor->ProcessAudios("<|audio_1|>", audios.get());
  auto in5 = processor->ProcessAudios(prompts);
  auto in6 = processor->ProcessImagesAndAudios("both", images.get(), audios.get());
  auto in7 = processor->ProcessImagesAndAudios(prompts, images.get(), audios.get());
  OgaString processor_text = processor->Decode(prompt, 3);
#if OGA_USE_SPAN
  OgaString processor_span_text = processor->Decode(std::span<const int32_t>(prompt));
#endif
  auto processor_stream = OgaTokenizerStream::Create(*processor);

  // Engine and requests.
  auto engine = OgaEngine::Create(*model);
  auto request = OgaRequest::Create(*params);
  request->AddTokens(*sequences);
  request->SetOpaqueData(&handle);
  void* opaque = request->GetOpaqueData();
  engine->Add(*request);
  while (engine->HasPendingRequests()) {
    std::unique_ptr<OgaRequest> ready = engine->Step();
    while (ready && ready->HasUnseenTokens()) ids += ready->GetUnseenToken();
  }
  flags = flags || request->IsTurnComplete();
  request->Continue(*sequences);
  engine->Remove(*request);

  // Streaming audio.
  auto streaming = OgaStreamingProcessor::Create(*model);
  streaming->SetOption("chunk_ms", "500");
  OgaString option = streaming->GetOption("chunk_ms");
  std::vector<float> samples(16000);
  std::unique_ptr<OgaNamedTensors> chunk = streaming->Process(samples.data(), samples.size());
  std::unique_ptr<OgaNamedTensors> rest = streaming->Flush();

  std::printf("%d %zu %s %zu %p %d %s %s %s %s %f %d %d %zu %p %zu %p %zu %zu %p %llu %zu %p %p\n",
              device_id, string_count, first_string, sequence_total,
              static_cast<const void*>(sequence_data), ids, decoded.p_, chat.p_, chat2.p_, piece,
              numbers, flags ? 1 : 0, static_cast<int>(type), dims.size() + named_count, data,
              token_count + next_tokens.size(), static_cast<const void*>(generated_data), generated,
              mtp_counts, static_cast<const void*>(mtp_data),
              static_cast<unsigned long long>(accepted), names->Count(), opaque,
              static_cast<const void*>(option.p_));
#if OGA_USE_SPAN
  std::printf("%zu %zu\n", sequence_view.size(), whole.size());
#endif
}

#ifdef EBB_ORT_GENAI_H
// ebb-only: OgaString is move-only there (genai's copies, which would free twice).
static_assert(!std::is_copy_constructible_v<OgaString>, "OgaString must not be copyable");
static_assert(std::is_nothrow_move_constructible_v<OgaString>, "OgaString moves");
#endif

// The README's seed loop: greedy generation of up to 64 tokens from a fixed prompt.
void SeedLoop(const char* path) {
  auto model = OgaModel::Create(path);
  auto tokenizer = OgaTokenizer::Create(*model);
  auto sequences = OgaSequences::Create();
  tokenizer->Encode("Once upon a time", *sequences);
  auto params = OgaGeneratorParams::Create(*model);
  params->SetSearchOption("max_length", 64);
  params->SetSearchOptionBool("do_sample", false);
  auto generator = OgaGenerator::Create(*model, *params);
  generator->AppendTokenSequences(*sequences);
  while (!generator->IsDone()) {
    generator->GenerateNextToken();
  }
  auto out = tokenizer->Decode(generator->GetSequenceData(0), generator->GetSequenceCount(0));
  std::printf("%s\n", static_cast<const char*>(out));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 99) ExerciseEverything(argv[1]);
    if (argc > 1) SeedLoop(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
