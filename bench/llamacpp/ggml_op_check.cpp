// bench/llamacpp/ggml_op_check.cpp — a whole decoder model folder in plain ORT, its MatMulNBits
// original against the ebb.ggml.MatMulQ4_0 rewrite (bench/llamacpp/ggml_op_model.py), without ebb
// (issue 28 item 3).
//
//   ggml_op_check --ref DIR --op DIR [--op-library SO] [--prompt 128] [--decode 16]
//                 [--threads 2] [--gap-ms 300]
//
// --op-library defaults to the custom_ops_library in the --op folder's genai_config.json. Both
// folders must hold model.onnx with the layout tools/synth_model.py writes for llama / phi3 / qwen2
// (inputs input_ids, attention_mask int64, past_key_values.%d.{key,value}; outputs logits,
// present.%d.{key,value}): each past input is fed the present output of the same name after
// "present.". One prefill of --prompt seeded tokens, then --decode greedy steps; the op model is
// fed the reference's tokens (teacher forcing), so every step compares the same positions. The
// two models run one after the other (each session created for its turn, then freed), after a
// --gap-ms sleep, each after one unmeasured warm-up prefill. Prints one JSON line per model
// (prefill seconds, median decode-step seconds) and one with the largest logit difference relative
// to the largest |logit| over all steps and how many steps' argmax tokens agree.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "onnxruntime_cxx_api.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "ggml_op_check: %s\n", why.c_str());
  std::exit(1);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Die("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The string value of "key": "..." (first occurrence; no escapes), or "".
std::string JsonString(const std::string& text, const std::string& key) {
  const size_t p = text.find("\"" + key + "\"");
  if (p == std::string::npos) return "";
  const size_t q = text.find('"', text.find(':', p) + 1);
  const size_t e = text.find('"', q + 1);
  return q == std::string::npos || e == std::string::npos ? "" : text.substr(q + 1, e - q - 1);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Result {
  std::vector<std::vector<float>> logits;  // per step: the last position's logits
  std::vector<int64_t> tokens;             // per step: its argmax
  double prefill_s = 0;
  std::vector<double> decode_s;
};

// Prefill `prompt`, then one step per `feed` token (or, when feed is empty, `decode` greedy steps).
Result RunModel(Ort::Env& env, const std::string& dir, const std::string& library, int threads,
                const std::vector<int64_t>& prompt, const std::vector<int64_t>& feed, int decode) {
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(threads);
  so.SetInterOpNumThreads(1);
  if (!library.empty()) so.RegisterCustomOpsLibrary(library.c_str());
  const std::string path = dir + "/model.onnx";
  Ort::Session session(env, path.c_str(), so);
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < session.GetInputCount(); ++i) {
    in_names.push_back(session.GetInputNameAllocated(i, alloc).get());
  }
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    out_names.push_back(session.GetOutputNameAllocated(i, alloc).get());
  }
  std::vector<const char*> in_c, out_c;
  for (auto& s : in_names) in_c.push_back(s.c_str());
  for (auto& s : out_names) out_c.push_back(s.c_str());
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);

  // Empty pasts: [batch 1, kv heads, 0, head size] from the model's declared shapes.
  std::vector<Ort::Value> past(in_names.size());
  const auto empty_pasts = [&] {
    for (size_t i = 0; i < in_names.size(); ++i) {
      if (in_names[i].rfind("past_key_values.", 0) != 0) continue;
      std::vector<int64_t> shape =
          session.GetInputTypeInfo(i).GetTensorTypeAndShapeInfo().GetShape();
      if (shape.size() != 4) Die(in_names[i] + " is not 4-D");
      shape[0] = 1;
      shape[2] = 0;
      past[i] = Ort::Value::CreateTensor<float>(alloc, shape.data(), shape.size());
    }
  };
  Result r;
  std::vector<int64_t> ids;
  int64_t total = 0;
  const int steps = 1 + (feed.empty() ? decode : static_cast<int>(feed.size()));
  // Step -1: a warm-up prefill (first-call allocations, ggml's graphs), not measured or kept.
  for (int step = -1; step < steps; ++step) {
    if (step <= 0) {
      empty_pasts();
      ids = prompt;
      total = 0;
    }
    total += static_cast<int64_t>(ids.size());
    std::vector<int64_t> mask(static_cast<size_t>(total), 1);
    const int64_t ids_shape[] = {1, static_cast<int64_t>(ids.size())};
    const int64_t mask_shape[] = {1, total};
    std::vector<Ort::Value> inputs;
    for (size_t i = 0; i < in_names.size(); ++i) {
      if (in_names[i] == "input_ids") {
        inputs.push_back(
            Ort::Value::CreateTensor<int64_t>(mem, ids.data(), ids.size(), ids_shape, 2));
      } else if (in_names[i] == "attention_mask") {
        inputs.push_back(
            Ort::Value::CreateTensor<int64_t>(mem, mask.data(), mask.size(), mask_shape, 2));
      } else if (past[i]) {
        inputs.push_back(std::move(past[i]));
      } else {
        Die("no value for input " + in_names[i]);
      }
    }
    const auto t0 = Clock::now();
    std::vector<Ort::Value> outs = session.Run(Ort::RunOptions{}, in_c.data(), inputs.data(),
                                               inputs.size(), out_c.data(), out_c.size());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (step < 0) continue;
    if (step == 0) {
      r.prefill_s = s;
    } else {
      r.decode_s.push_back(s);
    }
    for (size_t o = 0; o < out_names.size(); ++o) {
      if (out_names[o] == "logits") {
        const auto shape = outs[o].GetTensorTypeAndShapeInfo().GetShape();
        const size_t vocab = static_cast<size_t>(shape.back());
        const float* l = outs[o].GetTensorData<float>() + (ids.size() - 1) * vocab;
        r.logits.emplace_back(l, l + vocab);
        r.tokens.push_back(std::max_element(l, l + vocab) - l);
      } else if (out_names[o].rfind("present.", 0) == 0) {
        const std::string in = "past_key_values." + out_names[o].substr(8);
        const auto it = std::find(in_names.begin(), in_names.end(), in);
        if (it == in_names.end()) Die("no input " + in + " for output " + out_names[o]);
        past[static_cast<size_t>(it - in_names.begin())] = std::move(outs[o]);
      }
    }
    if (step + 1 < steps) ids = {feed.empty() ? r.tokens.back() : feed[static_cast<size_t>(step)]};
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ref, op, library;
  int prompt_len = 128, decode = 16, threads = 2, gap_ms = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ref") {
      ref = v;
    } else if (k == "--op") {
      op = v;
    } else if (k == "--op-library") {
      library = v;
    } else if (k == "--prompt") {
      prompt_len = std::atoi(v.c_str());
    } else if (k == "--decode") {
      decode = std::atoi(v.c_str());
    } else if (k == "--threads") {
      threads = std::atoi(v.c_str());
    } else if (k == "--gap-ms") {
      gap_ms = std::atoi(v.c_str());
    } else {
      Die("unknown option " + k);
    }
  }
  if (ref.empty() || op.empty() || prompt_len < 1 || decode < 0 || threads < 1) {
    Die("usage: ggml_op_check --ref DIR --op DIR [--op-library SO] [--prompt 128] [--decode 16] "
        "[--threads 2] [--gap-ms 300]");
  }
  if (library.empty())
    library = JsonString(ReadFile(op + "/genai_config.json"), "custom_ops_library");
  if (library.empty())
    Die("no --op-library and no custom_ops_library in " + op + "/genai_config.json");
  const std::string cfg = ReadFile(ref + "/genai_config.json");
  const size_t vp = cfg.find("\"vocab_size\":");
  const long vocab = vp == std::string::npos ? 0 : std::strtol(cfg.c_str() + vp + 13, nullptr, 10);
  if (vocab < 1) Die("no vocab_size in " + ref + "/genai_config.json");

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int64_t> tok(0, vocab - 1);
  std::vector<int64_t> prompt(static_cast<size_t>(prompt_len));
  for (auto& t : prompt) t = tok(rng);

  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "ggml_op_check");
  const Result a = RunModel(env, ref, "", threads, prompt, {}, decode);
  std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  // Teacher forcing: the op model decodes the reference's greedy tokens.
  const std::vector<int64_t> feed(a.tokens.begin(), a.tokens.end() - 1);
  const Result b = RunModel(env, op, library, threads, prompt, feed, decode);

  double max_abs = 0, max_diff = 0;
  int agree = 0;
  for (size_t s = 0; s < a.logits.size() && s < b.logits.size(); ++s) {
    for (size_t i = 0; i < a.logits[s].size(); ++i) {
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(a.logits[s][i])));
      max_diff =
          std::max(max_diff, static_cast<double>(std::fabs(a.logits[s][i] - b.logits[s][i])));
    }
    agree += a.tokens[s] == b.tokens[s];
  }
  std::printf(
      "{\"model\": \"ref\", \"dir\": \"%s\", \"prompt\": %d, \"prefill_s\": %.4f, "
      "\"decode_median_s\": %.5f}\n",
      ref.c_str(), prompt_len, a.prefill_s, Median(a.decode_s));
  std::printf(
      "{\"model\": \"op\", \"dir\": \"%s\", \"prompt\": %d, \"prefill_s\": %.4f, "
      "\"decode_median_s\": %.5f}\n",
      op.c_str(), prompt_len, b.prefill_s, Median(b.decode_s));
  std::printf(
      "{\"kind\": \"compare\", \"steps\": %zu, \"argmax_agree\": %d, "
      "\"max_logit_diff_rel\": %.3e}\n",
      a.logits.size(), agree, max_abs > 0 ? max_diff / max_abs : 0.0);
  return 0;
}
