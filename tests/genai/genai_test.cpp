// genai_test.cpp — ebb's libonnxruntime-genai.so through genai's C API (ort_genai_c.h): the
// results genai itself publishes for its gpt2 test model, llama2.c's text on stories260k, MLPerf
// Client's call sequence against ebb's native API, and the error paths. Links libebb.so (shared,
// the same copy the genai library uses) for the native comparisons.
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb_genai.h"
#include "mlperf_calls.h"
#include "ort_genai_c.h"
#include "test_env.h"

namespace fs = std::filesystem;

namespace {

// The message of `r` (freed), or "" for success.
std::string Take(OgaResult* r) {
  if (r == nullptr) return "";
  std::string m = OgaResultGetError(r);
  OgaDestroyResult(r);
  return m;
}

#define OK(call) ASSERT_EQ(Take(call), "")

struct ModelDel {
  void operator()(OgaModel* p) const { OgaDestroyModel(p); }
};
struct ParamsDel {
  void operator()(OgaGeneratorParams* p) const { OgaDestroyGeneratorParams(p); }
};
struct GenDel {
  void operator()(OgaGenerator* p) const { OgaDestroyGenerator(p); }
};
struct TensorDel {
  void operator()(OgaTensor* p) const { OgaDestroyTensor(p); }
};
using ModelPtr = std::unique_ptr<OgaModel, ModelDel>;
using ParamsPtr = std::unique_ptr<OgaGeneratorParams, ParamsDel>;
using GenPtr = std::unique_ptr<OgaGenerator, GenDel>;
using TensorPtr = std::unique_ptr<OgaTensor, TensorDel>;

ModelPtr Load(const fs::path& dir) {
  OgaModel* m = nullptr;
  const std::string err = Take(OgaCreateModel(dir.c_str(), &m));
  EXPECT_EQ(err, "");
  return ModelPtr(m);
}

// A model, params with `max_length`, and a generator on them: how most tests here start.
struct Opened {
  ModelPtr model;
  ParamsPtr params;
  GenPtr gen;
};

Opened Open(const fs::path& dir, double max_length) {
  Opened o;
  o.model = Load(dir);
  if (!o.model) return o;
  OgaGeneratorParams* p = nullptr;
  EXPECT_EQ(Take(OgaCreateGeneratorParams(o.model.get(), &p)), "");
  o.params.reset(p);
  if (!p) return o;
  EXPECT_EQ(Take(OgaGeneratorParamsSetSearchNumber(p, "max_length", max_length)), "");
  OgaGenerator* g = nullptr;
  EXPECT_EQ(Take(OgaCreateGenerator(o.model.get(), p, &g)), "");
  o.gen.reset(g);
  return o;
}

std::vector<int32_t> Sequence(const OgaGenerator* g, size_t row) {
  const int32_t* d = OgaGenerator_GetSequenceData(g, row);
  return std::vector<int32_t>(d, d + OgaGenerator_GetSequenceCount(g, row));
}

const fs::path kGpt2 = ebb::testing::SharedDir() / "models/tiny-random-gpt2-fp32";
const fs::path kStories = ebb::testing::SharedDir() / "models/stories260k";

// genai's own C API test (test/c_api_tests.cpp): greedy, batch 2, max_length 10 on its gpt2
// model, and the prompt's last-token logits it publishes (../shared/models/README.md).
TEST(Genai, Gpt2GreedyBatchAndLogitsMatchGenaisPublishedResults) {
  EBB_SKIP_UNLESS_EXISTS(kGpt2);
  ModelPtr model = Load(kGpt2);
  ASSERT_TRUE(model);
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "max_length", 10));
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "batch_size", 2));
  OgaGenerator* g = nullptr;
  OK(OgaCreateGenerator(model.get(), params.get(), &g));
  GenPtr gen(g);
  model.reset();  // genai's rule: the params and the generator keep the model alive
  const int32_t ids[] = {0, 0, 0, 52, 0, 0, 195, 731};
  OK(OgaGenerator_AppendTokens(gen.get(), ids, 8));
  OgaTensor* t = nullptr;
  OK(OgaGenerator_GetLogits(gen.get(), &t));
  TensorPtr logits(t);
  size_t rank = 0;
  OK(OgaTensorGetShapeRank(logits.get(), &rank));
  ASSERT_EQ(rank, 3u);
  int64_t shape[3];
  OK(OgaTensorGetShape(logits.get(), shape, 3));
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 1);
  EXPECT_EQ(shape[2], 1000);
  void* data = nullptr;
  OK(OgaTensorGetData(logits.get(), &data));
  const float* f = static_cast<const float*>(data);
  const float want[2][5] = {{-0.12675379f, -0.04443946f, 0.14492269f, 0.03021223f, -0.03212897f},
                            {0.2938929f, -0.10538938f, -0.00226692f, 0.12050669f, -0.10622668f}};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(f[r * 1000 + i * 200], want[r][i], 1e-3) << r << i;
  }
  while (!OgaGenerator_IsDone(gen.get())) OK(OgaGenerator_GenerateNextToken(gen.get()));
  EXPECT_EQ(Sequence(gen.get(), 0),
            (std::vector<int32_t>{0, 0, 0, 52, 204, 204, 204, 204, 204, 204}));
  EXPECT_EQ(Sequence(gen.get(), 1),
            (std::vector<int32_t>{0, 0, 195, 731, 731, 114, 114, 114, 114, 114}));
}

TEST(Genai, Gpt2RewindSetLogitsGetOutputAndTopKAboveVocab) {
  EBB_SKIP_UNLESS_EXISTS(kGpt2);
  auto [model, params, gen] = Open(kGpt2, 12);
  ASSERT_TRUE(gen);
  const int32_t ids[] = {0, 0, 195, 731};
  OK(OgaGenerator_AppendTokens(gen.get(), ids, 4));
  for (int i = 0; i < 4; ++i) OK(OgaGenerator_GenerateNextToken(gen.get()));
  const std::vector<int32_t> first = Sequence(gen.get(), 0);
  EXPECT_EQ(OgaGenerator_TokenCount(gen.get()), 8u);
  // Rewind to the prompt and generate again: the same greedy tokens.
  OK(OgaGenerator_RewindTo(gen.get(), 4));
  EXPECT_EQ(OgaGenerator_TokenCount(gen.get()), 4u);
  for (int i = 0; i < 4; ++i) OK(OgaGenerator_GenerateNextToken(gen.get()));
  EXPECT_EQ(Sequence(gen.get(), 0), first);
  // SetLogits: every logit -inf but one id: that id is generated next.
  std::vector<float> forced(1000, -INFINITY);
  forced[777] = 0;
  const int64_t shape[] = {1, 1000};
  OgaTensor* t = nullptr;
  OK(OgaCreateTensorFromBuffer(forced.data(), shape, 2, OgaElementType_float32, &t));
  TensorPtr tensor(t);
  OK(OgaGenerator_SetLogits(gen.get(), tensor.get()));
  OK(OgaGenerator_GenerateNextToken(gen.get()));
  const int32_t* next = nullptr;
  size_t n = 0;
  OK(OgaGenerator_GetNextTokens(gen.get(), &next, &n));
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(next[0], 777);
  // GetOutput("logits") is there; a name the graph lacks is refused naming what it has.
  OgaTensor* out = nullptr;
  OK(OgaGenerator_GetOutput(gen.get(), "logits", &out));
  TensorPtr out_t(out);
  const std::string err = Take(OgaGenerator_GetOutput(gen.get(), "present.0.key", &out));
  EXPECT_NE(err.find("OgaGenerator_GetOutput"), std::string::npos) << err;
  EXPECT_NE(err.find("\"present_0\""), std::string::npos) << err;
  // A wrong-sized SetLogits names the sizes.
  const int64_t bad_shape[] = {1, 10};
  OgaTensor* bad = nullptr;
  OK(OgaCreateTensorFromBuffer(forced.data(), bad_shape, 2, OgaElementType_float32, &bad));
  TensorPtr bad_t(bad);
  EXPECT_NE(Take(OgaGenerator_SetLogits(gen.get(), bad_t.get())).find("vocab_size 1000"),
            std::string::npos);
  // top_k above the vocabulary is refused naming vocab_size.
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "top_k", 5000));
  OgaGenerator* g2 = nullptr;
  const std::string topk = Take(OgaCreateGenerator(model.get(), params.get(), &g2));
  EXPECT_EQ(g2, nullptr);
  EXPECT_NE(topk.find("vocab_size 1000"), std::string::npos) << topk;
}

// The KV outputs hold the sequence's keys and values: [2, batch, heads, length, head] for gpt2's
// combined layout, [batch, kv_heads, length, head] for separate K and V. Attention is causal, so
// the KV of a prompt's first tokens equals the KV a longer prompt computes for those positions,
// and K differs from V: a test that reading the wrong tensor, row or positions would fail.
std::vector<float> KvOf(OgaGenerator* g, const char* name, std::vector<int64_t>* shape) {
  OgaTensor* t = nullptr;
  EXPECT_EQ(Take(OgaGenerator_GetOutput(g, name, &t)), "");
  if (t == nullptr) return {};
  TensorPtr tensor(t);
  size_t rank = 0;
  EXPECT_EQ(Take(OgaTensorGetShapeRank(t, &rank)), "");
  shape->assign(rank, 0);
  EXPECT_EQ(Take(OgaTensorGetShape(t, shape->data(), rank)), "");
  OgaElementType type;
  EXPECT_EQ(Take(OgaTensorGetType(t, &type)), "");
  EXPECT_EQ(type, OgaElementType_float32);
  size_t n = 1;
  for (int64_t d : *shape) n *= static_cast<size_t>(d);
  void* data = nullptr;
  EXPECT_EQ(Take(OgaTensorGetData(t, &data)), "");
  const float* f = static_cast<const float*>(data);
  return std::vector<float>(f, f + n);
}

void ExpectCausalKv(const fs::path& dir, const std::vector<int32_t>& prompt, const char* name,
                    const std::vector<int64_t>& per_pos_shape) {
  ModelPtr model = Load(dir);
  ASSERT_TRUE(model);
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "max_length", 32));
  std::vector<std::vector<float>> kv;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t len : {prompt.size() - 2, prompt.size()}) {
    OgaGenerator* g = nullptr;
    OK(OgaCreateGenerator(model.get(), params.get(), &g));
    GenPtr gen(g);
    OK(OgaGenerator_AppendTokens(gen.get(), prompt.data(), len));
    shapes.emplace_back();
    kv.push_back(KvOf(gen.get(), name, &shapes.back()));
  }
  // Shape: per_pos_shape with the length inserted before head_size.
  for (size_t i = 0; i < 2; ++i) {
    std::vector<int64_t> want = per_pos_shape;
    want.insert(want.end() - 1, static_cast<int64_t>(i == 0 ? prompt.size() - 2 : prompt.size()));
    EXPECT_EQ(shapes[i], want);
  }
  // Each [.., length, head] block: the short run's positions equal the long run's first ones.
  const int64_t head = per_pos_shape.back();
  const int64_t short_len = static_cast<int64_t>(prompt.size()) - 2;
  const int64_t long_len = static_cast<int64_t>(prompt.size());
  const size_t blocks = kv[0].size() / static_cast<size_t>(short_len * head);
  ASSERT_EQ(blocks, kv[1].size() / static_cast<size_t>(long_len * head));
  double max_diff = 0, norm = 0;
  for (size_t b = 0; b < blocks; ++b) {
    for (int64_t i = 0; i < short_len * head; ++i) {
      const float a = kv[0][b * short_len * head + i];
      const float c = kv[1][b * long_len * head + i];
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(a - c)));
      norm += std::fabs(a);
    }
  }
  EXPECT_LT(max_diff, 1e-4) << name;
  EXPECT_GT(norm, 0) << name << ": an all-zero KV proves nothing";
}

TEST(Genai, KvOutputsAreTheSequencesKeysAndValues) {
  // Separate K and V (present.%d.key / .value), on the synthesized llama.
  const fs::path llama = ebb::testing::TestModelsDir() / "llama-tiny-fp32";
  ExpectCausalKv(llama, {1, 15, 27, 99, 4, 230}, "present.1.key", {1, 2, 16});
  ExpectCausalKv(llama, {1, 15, 27, 99, 4, 230}, "present.1.value", {1, 2, 16});
}

TEST(Genai, KvOutputsNameTheirOwnTensor) {
  // K and V, and two layers, are different tensors: the name picks its own.
  auto [model, params, gen] = Open(ebb::testing::TestModelsDir() / "llama-tiny-fp32", 0);
  ASSERT_TRUE(gen);
  const int32_t ids[] = {1, 15, 27, 99};
  OK(OgaGenerator_AppendTokens(gen.get(), ids, 4));
  std::vector<int64_t> shape;
  const auto k0 = KvOf(gen.get(), "present.0.key", &shape);
  const auto v0 = KvOf(gen.get(), "present.0.value", &shape);
  const auto k1 = KvOf(gen.get(), "present.1.key", &shape);
  EXPECT_NE(k0, v0);
  EXPECT_NE(k0, k1);
}

// gpt2's combined present_%d against ONNX Runtime run directly on the same graph (no ebb):
// [2, 1, 4, S, 8] after the prompt, within 1e-5.
TEST(Genai, Gpt2CombinedKvOutputsEqualOrtsPresent) {
  EBB_SKIP_UNLESS_EXISTS(kGpt2);
  ExpectCausalKv(kGpt2, {0, 0, 195, 731, 52, 7}, "present_2", {2, 1, 4, 8});
  const std::vector<int32_t> prompt = {0, 0, 195, 731};
  const int64_t S = static_cast<int64_t>(prompt.size());
  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "genai_test");
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  Ort::Session session(env, (kGpt2 / "past.onnx").c_str(), so);
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<int32_t> ids = prompt, pos = {0, 1, 2, 3}, mask(4, 1);
  const std::array<int64_t, 2> dims{1, S};
  std::vector<Ort::Value> inputs;
  std::vector<std::string> names = {"input_ids", "position_ids", "attention_mask"};
  inputs.push_back(Ort::Value::CreateTensor<int32_t>(mem, ids.data(), ids.size(), dims.data(), 2));
  inputs.push_back(Ort::Value::CreateTensor<int32_t>(mem, pos.data(), pos.size(), dims.data(), 2));
  inputs.push_back(
      Ort::Value::CreateTensor<int32_t>(mem, mask.data(), mask.size(), dims.data(), 2));
  const std::array<int64_t, 5> past_dims{2, 1, 4, 0, 8};
  float dummy = 0;
  for (int l = 0; l < 5; ++l) {
    names.push_back("past_" + std::to_string(l));
    inputs.push_back(Ort::Value::CreateTensor<float>(mem, &dummy, 0, past_dims.data(), 5));
  }
  std::vector<const char*> in_names;
  for (const auto& n : names) in_names.push_back(n.c_str());
  const char* out_name = "present_2";
  auto outs = session.Run(Ort::RunOptions{nullptr}, in_names.data(), inputs.data(), inputs.size(),
                          &out_name, 1);
  const auto info = outs[0].GetTensorTypeAndShapeInfo();
  ASSERT_EQ(info.GetShape(), (std::vector<int64_t>{2, 1, 4, S, 8}));
  const float* want = outs[0].GetTensorData<float>();

  auto [model, params, gen] = Open(kGpt2, 16);
  ASSERT_TRUE(gen);
  OK(OgaGenerator_AppendTokens(gen.get(), prompt.data(), prompt.size()));
  std::vector<int64_t> shape;
  const auto got = KvOf(gen.get(), "present_2", &shape);
  ASSERT_EQ(shape, (std::vector<int64_t>{2, 1, 4, S, 8}));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << i;
}

// llama2.c's run.c -t 0 output for "Once upon a time, a dog", max_length 30
// (../shared/models/README.md), through genai's tokenizer, generator and stream.
TEST(Genai, Stories260kGivesLlama2csTextThroughGenaisApi) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  ModelPtr model = Load(kStories);
  ASSERT_TRUE(model);
  OgaTokenizer* tok = nullptr;
  OK(OgaCreateTokenizer(model.get(), &tok));
  std::unique_ptr<OgaTokenizer, void (*)(OgaTokenizer*)> tokenizer(tok, OgaDestroyTokenizer);
  OgaSequences* s = nullptr;
  OK(OgaCreateSequences(&s));
  std::unique_ptr<OgaSequences, void (*)(OgaSequences*)> seqs(s, OgaDestroySequences);
  // genai encodes without special tokens by default (its chat templates carry BOS); llama2.c
  // starts with <s>, so this program asks for them, as genai documents.
  const char* keys[] = {"add_special_tokens"};
  const char* values[] = {"true"};
  OK(OgaUpdateTokenizerOptions(tokenizer.get(), keys, values, 1));
  OK(OgaTokenizerEncode(tokenizer.get(), "Once upon a time, a dog", seqs.get()));
  const std::vector<int32_t> want_prompt = {1, 403, 407, 261, 378, 432, 261, 400, 428};
  ASSERT_EQ(OgaSequencesGetSequenceCount(seqs.get(), 0), want_prompt.size());
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "max_length", 30));
  OgaGenerator* g = nullptr;
  OK(OgaCreateGenerator(model.get(), params.get(), &g));
  GenPtr gen(g);
  OK(OgaGenerator_AppendTokenSequences(gen.get(), seqs.get()));
  OgaTokenizerStream* st = nullptr;
  OK(OgaCreateTokenizerStream(tokenizer.get(), &st));
  std::unique_ptr<OgaTokenizerStream, void (*)(OgaTokenizerStream*)> stream(
      st, OgaDestroyTokenizerStream);
  std::string streamed = "Once upon a time, a dog";
  while (!OgaGenerator_IsDone(gen.get())) {
    OK(OgaGenerator_GenerateNextToken(gen.get()));
    const int32_t* next = nullptr;
    size_t n = 0;
    OK(OgaGenerator_GetNextTokens(gen.get(), &next, &n));
    const char* piece = nullptr;
    OK(OgaTokenizerStreamDecode(stream.get(), next[0], &piece));
    streamed += piece;
  }
  EXPECT_EQ(Sequence(gen.get(), 0),
            (std::vector<int32_t>{1,   403, 407, 261, 378, 432, 261, 400, 428, 395,
                                  392, 412, 444, 286, 399, 344, 444, 429, 275, 266,
                                  426, 346, 286, 399, 344, 444, 429, 275, 266, 267}));
  const char* text = nullptr;
  const std::vector<int32_t> seq = Sequence(gen.get(), 0);
  OK(OgaTokenizerDecode(tokenizer.get(), seq.data(), seq.size(), &text));
  const std::string decoded = text;
  OgaDestroyString(text);
  const std::string want =
      "Once upon a time, a dog named Max was very excited. He was very excited to";
  EXPECT_EQ(decoded, want);
  EXPECT_EQ(streamed, want);
}

// MLPerf Client's 20 calls (mlperf_calls.c) give the greedy tokens of ebb's native API, on the
// small int4 shape the project synthesizes.
TEST(Genai, MlperfClientsCallsGiveTheNativeApisTokens) {
  const fs::path dir = ebb::testing::TestModelsDir() / "llama-small-int4";
  ASSERT_TRUE(fs::exists(dir)) << dir;
  const std::vector<int32_t> prompt = {1, 15, 27, 99, 4, 230, 17, 5};
  const int max_length = 40;
  std::vector<int32_t> native;
  {
    auto m = ebb::LoadModel(dir);
    ebb::GeneratorParams gp;
    gp.max_length = max_length;
    ebb::Generator g(m, gp);
    g.AppendTokens(prompt);
    while (!g.done()) g.GenerateNextToken();
    const auto s = g.sequence(0);
    native.assign(s.begin(), s.end());
  }
  std::vector<int32_t> out(1024);
  size_t n = 0;
  char err[1024];
  ASSERT_EQ(mlperf_generate(dir.c_str(), prompt.data(), prompt.size(), max_length, out.data(),
                            out.size(), &n, err, sizeof err),
            0)
      << err;
  out.resize(n);
  EXPECT_EQ(out, native);
  EXPECT_GT(out.size(), prompt.size());
}

TEST(Genai, SearchOptionsReportWhatIsInForceAndRefuseWhatEbbCannotDo) {
  const fs::path dir = ebb::testing::TestModelsDir() / "llama-tiny-fp32";
  ModelPtr model = Load(dir);
  ASSERT_TRUE(model);
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  double v = -1;
  OK(OgaGeneratorParamsGetSearchNumber(params.get(), "num_beams", &v));
  EXPECT_EQ(v, 1);
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "temperature", 0.5));
  OK(OgaGeneratorParamsGetSearchNumber(params.get(), "temperature", &v));
  EXPECT_EQ(v, 0.5);
  bool b = true;
  OK(OgaGeneratorParamsGetSearchBool(params.get(), "do_sample", &b));
  EXPECT_FALSE(b);
  EXPECT_NE(
      Take(OgaGeneratorParamsSetSearchNumber(params.get(), "num_beams", 4)).find("beam search"),
      std::string::npos);
  EXPECT_NE(Take(OgaGeneratorParamsSetSearchNumber(params.get(), "top_kk", 4)).find("top_k"),
            std::string::npos);
  EXPECT_NE(
      Take(OgaGeneratorParamsSetSearchBool(params.get(), "top_k", true)).find("SetSearchNumber"),
      std::string::npos);
  // The option table's range holds here as on every surface: temperature above 100 is refused
  // when the generator is created.
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "temperature", 1000));
  OgaGenerator* g = nullptr;
  EXPECT_NE(Take(OgaCreateGenerator(model.get(), params.get(), &g)).find("temperature"),
            std::string::npos);
  EXPECT_EQ(g, nullptr);
  // Lark is llguidance's format; ebb takes GBNF (docs/structured_output.md).
  EXPECT_NE(Take(OgaGeneratorParamsSetGuidance(params.get(), "lark_grammar", "start: \"a\"", false))
                .find("not supported"),
            std::string::npos);
  // A schema keyword ebb cannot honour is named when the generator is created.
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "temperature", 1));
  OK(OgaGeneratorParamsSetGuidance(params.get(), "json_schema",
                                   R"({"type":"integer","multipleOf":2})", false));
  EXPECT_NE(Take(OgaCreateGenerator(model.get(), params.get(), &g)).find("multipleOf"),
            std::string::npos);
  EXPECT_EQ(g, nullptr);
}

TEST(Genai, ConfigProvidersOverlayAndEbbSectionBecomeLoadOptions) {
  const fs::path dir = ebb::testing::TestModelsDir() / "llama-tiny-fp32";
  OgaConfig* c = nullptr;
  OK(OgaCreateConfig(dir.c_str(), &c));
  std::unique_ptr<OgaConfig, void (*)(OgaConfig*)> config(c, OgaDestroyConfig);
  OK(OgaConfigClearProviders(config.get()));
  OK(OgaConfigAppendProvider(config.get(), "cpu"));
  OK(OgaConfigOverlay(config.get(),
                      R"({"search": {"max_length": 20}, "ebb": {"kv_cache": {"mode": "dynamic"},)"
                      R"( "prefill_chunk_size": 64}})"));
  // A bad ebb key is refused by the overlay, naming it.
  const std::string bad = Take(OgaConfigOverlay(config.get(), R"({"ebb": {"kv_cach.mode": "x"}})"));
  EXPECT_NE(bad.find("kv_cach"), std::string::npos) << bad;
  OgaModel* m = nullptr;
  OK(OgaCreateModelFromConfig(config.get(), &m));
  ModelPtr model(m);
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  double max_length = 0;
  OK(OgaGeneratorParamsGetSearchNumber(params.get(), "max_length", &max_length));
  EXPECT_EQ(max_length, 20);
  const char* stats = nullptr;
  OK(EbbOgaModelStatsJson(model.get(), &stats));
  const std::string json = stats;
  OgaDestroyString(stats);
  EXPECT_NE(json.find("\"kv\""), std::string::npos) << json;
  OK(EbbOgaModelShrink(model.get()));
  const char* device = nullptr;
  OK(OgaModelGetDeviceType(model.get(), &device));
  EXPECT_STREQ(device, "cpu");
  OgaDestroyString(device);
  // An overlay that changes what ebb reads from disk is refused when the model is created.
  OK(OgaConfigOverlay(config.get(), R"({"model": {"context_length": 7}})"));
  OgaModel* m2 = nullptr;
  const std::string err = Take(OgaCreateModelFromConfig(config.get(), &m2));
  EXPECT_NE(err.find("model.context_length"), std::string::npos) << err;
  EXPECT_EQ(m2, nullptr);
}

TEST(Genai, RuntimeOptionsReachTheModelAndTerminateStopsTheGenerator) {
  const fs::path dir = ebb::testing::TestModelsDir() / "llama-tiny-fp32";
  auto [model, params, gen] = Open(dir, 16);
  ASSERT_TRUE(gen);
  const int32_t ids[] = {1, 5, 9};
  OK(OgaGenerator_AppendTokens(gen.get(), ids, 3));
  OK(OgaGenerator_SetRuntimeOption(gen.get(), "memory.shrink_every", "1"));
  OK(OgaGenerator_SetRuntimeOption(gen.get(), "memory.enable_memory_arena_shrinkage", "cpu:0"));
  EXPECT_NE(Take(OgaGenerator_SetRuntimeOption(gen.get(), "memory.shrink_every", "x"))
                .find("memory.shrink_every"),
            std::string::npos);
  OK(OgaGenerator_SetRuntimeOption(gen.get(), "terminate_session", "1"));
  EXPECT_TRUE(OgaGenerator_IsSessionTerminated(gen.get()));
  EXPECT_NE(Take(OgaGenerator_GenerateNextToken(gen.get())).find("terminated"), std::string::npos);
  OK(OgaGenerator_SetRuntimeOption(gen.get(), "terminate_session", "0"));
  OK(OgaGenerator_GenerateNextToken(gen.get()));
}

TEST(Genai, BadInputsGetErrorsNamingTheProblem) {
  OgaModel* m = nullptr;
  const std::string missing = Take(OgaCreateModel("/nonexistent/model", &m));
  EXPECT_NE(missing.find("genai_config.json"), std::string::npos) << missing;
  EXPECT_EQ(m, nullptr);
  ebb::testing::TempDir tmp("genai");
  std::ofstream(tmp / "genai_config.json") << "{not json";
  const std::string corrupt = Take(OgaCreateModel(tmp.path().c_str(), &m));
  EXPECT_NE(corrupt.find("not valid JSON"), std::string::npos) << corrupt;
  // Batch mismatch.
  ModelPtr model = Load(ebb::testing::TestModelsDir() / "llama-tiny-fp32");
  OgaGeneratorParams* p = nullptr;
  OK(OgaCreateGeneratorParams(model.get(), &p));
  ParamsPtr params(p);
  OK(OgaGeneratorParamsSetSearchNumber(params.get(), "batch_size", 2));
  OgaGenerator* g = nullptr;
  OK(OgaCreateGenerator(model.get(), params.get(), &g));
  GenPtr gen(g);
  const int32_t ids[] = {1, 2, 3};
  EXPECT_NE(Take(OgaGenerator_AppendTokens(gen.get(), ids, 3)).find("batch_size 2"),
            std::string::npos);
  EXPECT_NE(Take(OgaGenerator_SetModelInput(gen.get(), "pixel_values", nullptr)).find("tensor"),
            std::string::npos);
}

}  // namespace
