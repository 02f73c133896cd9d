// Smoke test: ONNX Runtime loads every tiny synthetic model (tools/synth_model.py) and runs a
// prefill step plus decode steps with the expected output shapes; decoders produce the same greedy
// tokens (and, within a tolerance, the same logits) as the NumPy reference
// tools/reference_forward.py.
//
// Reads model folders from $EBB_TEST_MODELS (make them with tools/make_test_models.sh DIR) and
// skips when it is unset. Uses only the ORT C++ API, GoogleTest and nlohmann/json.
//
// What it pins down about ORT 1.29's CPU GroupQueryAttention (GQA):
//  * rows of a batch are right-padded; per row only sum(attention_mask[b]) matters: seqlens_k =
//    sum - 1 is where the new token's K/V go, and total_sequence_length = mask width;
//  * a prompt needs mask width == sequence length (is_first_prompt); a decode step feeds one token;
//  * past and present may be one buffer of max_length (bound to both; present keeps that shape), or
//    a growing past where present = [batch, kv_heads, mask width, head_size].
#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "test_env.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Ort::Env& Env() {
  // As ebb does (src/ort/ort_env.h): ORT's telemetry off before the first env.
  static const int telemetry_off = setenv("ORT_DISABLE_TELEMETRY", "1", 1);
  static Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "synth_models_test");
  (void)telemetry_off;
  return env;
}

json ReadJson(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  return json::parse(f);
}

// Returns the model folder made by the `synth_test_models` fixture (tools/make_test_models.sh),
// or nullopt with *why set; a missing folder is a failure, not a skip.
std::optional<fs::path> ModelDir(const std::string& name, std::string* why) {
  fs::path dir = ebb::testing::TestModelsDir() / name;
  if (!fs::exists(dir / "genai_config.json")) {
    *why = dir.string() + " does not exist; run tools/make_test_models.sh " +
           ebb::testing::TestModelsDir().string() + " (ctest's synth_test_models fixture does)";
    return std::nullopt;
  }
  return dir;
}

std::string Format(const std::string& fmt, int i) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt.c_str(), i);
  return buf;
}

std::vector<int64_t> ShapeOf(const Ort::Value& v) {
  return v.GetTensorTypeAndShapeInfo().GetShape();
}

// Owns input buffers and values; binds them by name.
class Feeds {
 public:
  template <typename T>
  void Add(const std::string& name, std::vector<T> data, std::vector<int64_t> shape) {
    auto& store = Store<T>();
    store.push_back(std::move(data));
    auto& d = store.back();
    values_.emplace(
        name, Ort::Value::CreateTensor<T>(mem_, d.data(), d.size(), shape.data(), shape.size()));
  }
  // Wraps caller-owned memory (e.g. a shared KV buffer); the caller keeps it alive.
  void AddView(const std::string& name, float* data, size_t n, std::vector<int64_t> shape) {
    values_.emplace(name,
                    Ort::Value::CreateTensor<float>(mem_, data, n, shape.data(), shape.size()));
  }
  void AddValue(const std::string& name, Ort::Value v) { values_.emplace(name, std::move(v)); }

  // Runs the session; outputs named in share (output -> input) are written into that input's
  // buffer.
  std::map<std::string, Ort::Value> Run(Ort::Session& session,
                                        const std::map<std::string, std::string>& share = {}) {
    Ort::IoBinding binding(session);
    for (auto& [name, value] : values_) binding.BindInput(name.c_str(), value);
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < session.GetOutputCount(); ++i) {
      std::string name = session.GetOutputNameAllocated(i, alloc).get();
      auto it = share.find(name);
      if (it != share.end()) {
        binding.BindOutput(name.c_str(), values_.at(it->second));
      } else {
        binding.BindOutput(name.c_str(), mem_);
      }
    }
    session.Run(Ort::RunOptions{}, binding);
    std::vector<std::string> names = binding.GetOutputNames();
    std::vector<Ort::Value> outs = binding.GetOutputValues();
    std::map<std::string, Ort::Value> result;
    for (size_t i = 0; i < names.size(); ++i) result.emplace(names[i], std::move(outs[i]));
    return result;
  }

 private:
  template <typename T>
  std::deque<std::vector<T>>& Store() {
    if constexpr (std::is_same_v<T, float>)
      return f32_;
    else if constexpr (std::is_same_v<T, int64_t>)
      return i64_;
    else
      return i32_;
  }
  Ort::MemoryInfo mem_ = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeCPU);
  std::deque<std::vector<float>> f32_;
  std::deque<std::vector<int64_t>> i64_;
  std::deque<std::vector<int32_t>> i32_;
  std::map<std::string, Ort::Value> values_;
};

Ort::Session OpenSession(const fs::path& dir, const json& section) {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  fs::path model = dir / section.at("filename").get<std::string>();
  return Ort::Session(Env(), model.c_str(), so);
}

int Argmax(const float* p, int64_t n) { return static_cast<int>(std::max_element(p, p + n) - p); }

// ---------------------------------------------------------------------------------------------
// Decoders (llama/phi3/qwen2 with GQA, gpt2 with combined past)
// ---------------------------------------------------------------------------------------------
struct DecoderSpec {
  json genai;
  json ref;  // reference_greedy.json
  bool gpt2 = false;
  bool has_position_ids = false;
  int layers = 0, kv_heads = 0, head_size = 0, vocab = 0;
  std::vector<std::vector<int64_t>> prompts;
  std::vector<std::vector<int64_t>> sequences;
  bool int4 = false;
};

DecoderSpec LoadDecoder(const fs::path& dir) {
  DecoderSpec s;
  s.genai = ReadJson(dir / "genai_config.json");
  s.ref = ReadJson(dir / "reference_greedy.json");
  const json& m = s.genai.at("model");
  const json& dec = m.at("decoder");
  s.gpt2 = m.at("type") == "gpt2";
  s.layers = dec.at("num_hidden_layers");
  s.kv_heads = dec.at("num_key_value_heads");
  s.head_size = dec.at("head_size");
  s.vocab = m.at("vocab_size");
  s.has_position_ids = s.gpt2 || dec.at("inputs").contains("position_ids");
  s.prompts = s.ref.at("input_ids").get<std::vector<std::vector<int64_t>>>();
  s.sequences = s.ref.at("sequences").get<std::vector<std::vector<int64_t>>>();
  s.int4 = s.ref.at("act_quant") == "int8";
  return s;
}

// KV names of layer i: {past, present} pairs (gpt2: one combined pair, else key and value).
std::vector<std::pair<std::string, std::string>> KvNames(const DecoderSpec& s, int i) {
  const json& dec = s.genai["model"]["decoder"];
  if (s.gpt2)
    return {{Format(dec["inputs"]["past_names"], i), Format(dec["outputs"]["present_names"], i)}};
  return {
      {Format(dec["inputs"]["past_key_names"], i), Format(dec["outputs"]["present_key_names"], i)},
      {Format(dec["inputs"]["past_value_names"], i),
       Format(dec["outputs"]["present_value_names"], i)}};
}

std::vector<int64_t> KvShape(const DecoderSpec& s, int64_t batch, int64_t seq) {
  if (s.gpt2) return {2, batch, s.kv_heads, seq, s.head_size};
  return {batch, s.kv_heads, seq, s.head_size};
}

// Adds input_ids / attention_mask / position_ids (int32 for gpt2 like the genai fixture, else
// int64).
void AddTokens(const DecoderSpec& s, Feeds& feeds, const std::vector<int64_t>& ids, int64_t batch,
               int64_t seq, const std::vector<int64_t>& mask, int64_t mask_width,
               const std::vector<int64_t>& pos) {
  if (s.gpt2) {
    feeds.Add<int32_t>("input_ids", std::vector<int32_t>(ids.begin(), ids.end()), {batch, seq});
    feeds.Add<int32_t>("attention_mask", std::vector<int32_t>(mask.begin(), mask.end()),
                       {batch, mask_width});
    feeds.Add<int32_t>("position_ids", std::vector<int32_t>(pos.begin(), pos.end()), {batch, seq});
  } else {
    feeds.Add<int64_t>("input_ids", ids, {batch, seq});
    feeds.Add<int64_t>("attention_mask", mask, {batch, mask_width});
    if (s.has_position_ids) feeds.Add<int64_t>("position_ids", pos, {batch, seq});
  }
}

void ExpectLogitsClose(const DecoderSpec& s, const float* got, const json& want,
                       const std::string& what) {
  const double tol = s.int4 ? 2e-2 : 1e-3;
  double max_diff = 0;
  for (int v = 0; v < s.vocab; ++v)
    max_diff = std::max(max_diff, std::fabs(got[v] - want[v].get<double>()));
  EXPECT_LT(max_diff, tol) << what;
}

// Runs the batch of reference prompts (right-padded) for `steps` decode steps after the prefill.
// shared: past and present share one buffer of max_length per layer (GQA models only).
void RunDecoder(const fs::path& dir, bool shared, int steps) {
  DecoderSpec s = LoadDecoder(dir);
  Ort::Session session = OpenSession(dir, s.genai["model"]["decoder"]);
  const int64_t batch = static_cast<int64_t>(s.prompts.size());
  std::vector<int64_t> lens;
  for (auto& p : s.prompts) lens.push_back(static_cast<int64_t>(p.size()));
  const int64_t seq = *std::max_element(lens.begin(), lens.end());
  const int64_t max_length = s.ref.at("max_length");
  ASSERT_GE(max_length, seq + steps + 1);

  // Prompt, right-padded with 0 (attention_mask 0 there).
  std::vector<int64_t> ids(batch * seq, 0), mask(batch * seq, 0), pos(batch * seq, 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      if (t < lens[b]) ids[b * seq + t] = s.prompts[b][t], mask[b * seq + t] = 1;
      pos[b * seq + t] = t;
    }

  std::vector<std::vector<float>> shared_kv;  // one per past input when shared
  std::map<std::string, std::string> share;   // present -> past
  std::map<std::string, Ort::Value> out;
  Feeds feeds;
  AddTokens(s, feeds, ids, batch, seq, mask, seq, pos);
  for (int i = 0; i < s.layers; ++i) {
    for (auto& [past, present] : KvNames(s, i)) {
      if (shared) {
        auto shape = KvShape(s, batch, max_length);
        size_t n = 1;
        for (auto d : shape) n *= static_cast<size_t>(d);
        shared_kv.emplace_back(n, 0.0f);
        feeds.AddView(past, shared_kv.back().data(), n, shape);
        share[present] = past;
      } else {
        feeds.Add<float>(past, {}, KvShape(s, batch, 0));
      }
    }
  }
  out = feeds.Run(session, share);

  // Prefill checks.
  ASSERT_EQ(ShapeOf(out.at("logits")), (std::vector<int64_t>{batch, seq, s.vocab}));
  for (int i = 0; i < s.layers; ++i)
    for (auto& [past, present] : KvNames(s, i))
      EXPECT_EQ(ShapeOf(out.at(present)), KvShape(s, batch, shared ? max_length : seq)) << present;
  std::vector<int64_t> next(batch);
  const float* logits = out.at("logits").GetTensorData<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const float* row = logits + (b * seq + lens[b] - 1) * s.vocab;
    next[b] = Argmax(row, s.vocab);
    EXPECT_EQ(next[b], s.sequences[b][lens[b]]) << "prefill row " << b;
    ExpectLogitsClose(s, row, s.ref["prompt_logits"][b], "prefill logits row " + std::to_string(b));
  }

  // Decode steps: one token per row; row b's token is number lens[b] + step (0-based position).
  for (int step = 0; step < steps; ++step) {
    const int64_t width = seq + step + 1;
    std::vector<int64_t> dmask(batch * width, 0), dpos(batch);
    // The mask is the prompt's mask followed by a 1 per generated token, i.e. it mirrors the
    // concatenated cache of gpt2 (where padding stays in the cache, masked). GQA only uses the row
    // sums, and writes row b's new K/V at position sum - 1, so the same mask serves both.
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < seq; ++t) dmask[b * width + t] = mask[b * seq + t];
      for (int64_t t = seq; t < width; ++t) dmask[b * width + t] = 1;
      dpos[b] = lens[b] + step;
    }
    Feeds df;
    AddTokens(s, df, next, batch, 1, dmask, width, dpos);
    int kv_index = 0;
    for (int i = 0; i < s.layers; ++i) {
      for (auto& [past, present] : KvNames(s, i)) {
        if (shared) {
          auto& buf = shared_kv[kv_index++];
          df.AddView(past, buf.data(), buf.size(), KvShape(s, batch, max_length));
        } else {
          df.AddValue(past, std::move(out.at(present)));
        }
      }
    }
    out = df.Run(session, share);
    ASSERT_EQ(ShapeOf(out.at("logits")), (std::vector<int64_t>{batch, 1, s.vocab}));
    for (int i = 0; i < s.layers; ++i)
      for (auto& [past, present] : KvNames(s, i))
        EXPECT_EQ(ShapeOf(out.at(present)), KvShape(s, batch, shared ? max_length : width))
            << present;
    const float* dl = out.at("logits").GetTensorData<float>();
    for (int64_t b = 0; b < batch; ++b) {
      next[b] = Argmax(dl + b * s.vocab, s.vocab);
      EXPECT_EQ(next[b], s.sequences[b][lens[b] + step + 1])
          << "decode step " << step << " row " << b;
    }
  }
}

class DecoderTest : public ::testing::TestWithParam<std::string> {};
// gpt2 concatenates past and new KV, so it has no shared-buffer variant.
class GqaDecoderTest : public DecoderTest {};

TEST_P(DecoderTest, PrefillAndDecodeWithGrowingPastMatchReference) {
  std::string why;
  auto dir = ModelDir(GetParam(), &why);
  if (!dir) FAIL() << why;
  RunDecoder(*dir, /*shared=*/false, /*steps=*/2);
}

TEST_P(GqaDecoderTest, PrefillAndDecodeWithSharedPastPresentBufferMatchReference) {
  std::string why;
  auto dir = ModelDir(GetParam(), &why);
  if (!dir) FAIL() << why;
  RunDecoder(*dir, /*shared=*/true, /*steps=*/2);
}

INSTANTIATE_TEST_SUITE_P(Synth, DecoderTest,
                         ::testing::Values("llama-tiny-fp32", "llama-tiny-int4",
                                           "phi3-tiny-fp32-unfused", "qwen2-tiny-fp32",
                                           "gpt2-tiny-fp32"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });
INSTANTIATE_TEST_SUITE_P(Synth, GqaDecoderTest,
                         ::testing::Values("llama-tiny-fp32", "llama-tiny-int4",
                                           "phi3-tiny-fp32-unfused", "qwen2-tiny-fp32"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// ---------------------------------------------------------------------------------------------
// Encoder (bert)
// ---------------------------------------------------------------------------------------------
TEST(EncoderTest, BertRunsAndPaddingDoesNotChangeRealTokens) {
  std::string why;
  auto dir = ModelDir("bert-tiny-fp32", &why);
  if (!dir) FAIL() << why;
  json genai = ReadJson(*dir / "genai_config.json");
  const json& enc = genai.at("model").at("encoder");
  const int64_t hidden = enc.at("hidden_size");
  const int64_t cls = genai["model"]["bos_token_id"], sep = genai["model"]["eos_token_id"],
                pad = genai["model"]["pad_token_id"];
  Ort::Session session = OpenSession(*dir, enc);

  // Batch of 2, row 1 right-padded; then row 1 alone without padding.
  const int64_t seq = 6;
  std::vector<int64_t> ids = {cls, 40, 50, 60, 70, sep, cls, 80, 90, sep, pad, pad};
  std::vector<int64_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  Feeds f;
  f.Add<int64_t>("input_ids", ids, {2, seq});
  f.Add<int64_t>("attention_mask", mask, {2, seq});
  f.Add<int64_t>("token_type_ids", std::vector<int64_t>(2 * seq, 0), {2, seq});
  auto out = f.Run(session);
  const Ort::Value& h = out.at(enc.at("outputs").at("last_hidden_state").get<std::string>());
  ASSERT_EQ(ShapeOf(h), (std::vector<int64_t>{2, seq, hidden}));
  const float* hp = h.GetTensorData<float>();
  for (int64_t i = 0; i < 2 * seq * hidden; ++i) ASSERT_TRUE(std::isfinite(hp[i]));

  Feeds g;
  g.Add<int64_t>("input_ids", {cls, 80, 90, sep}, {1, 4});
  g.Add<int64_t>("attention_mask", {1, 1, 1, 1}, {1, 4});
  g.Add<int64_t>("token_type_ids", {0, 0, 0, 0}, {1, 4});
  auto single = g.Run(session);
  const float* sp = single.at("last_hidden_state").GetTensorData<float>();
  double max_diff = 0;
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t d = 0; d < hidden; ++d)
      max_diff =
          std::max(max_diff,
                   static_cast<double>(std::fabs(hp[(seq + t) * hidden + d] - sp[t * hidden + d])));
  EXPECT_LT(max_diff, 1e-4);
  // Rows differ: the output depends on the input.
  double row_diff = 0;
  for (int64_t d = 0; d < hidden; ++d)
    row_diff = std::max(
        row_diff, static_cast<double>(std::fabs(hp[hidden + d] - hp[(seq + 1) * hidden + d])));
  EXPECT_GT(row_diff, 1e-3);
}

}  // namespace
