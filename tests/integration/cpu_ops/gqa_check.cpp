// tests/integration/cpu_ops/gqa_check.cpp — ebb.cpu.GroupQueryAttention (libebb_cpu_ops.so) against
// ORT's com.microsoft GroupQueryAttention, op by op, on the models tools/gqa_model.py writes (issue
// 40 item 3).
//
//   gqa_check --model PREFIX --library libebb_cpu_ops.so [--cap 48]
//
// Runs PREFIX_ref.onnx and PREFIX_op.onnx on the same seeded inputs in each scenario below, twice:
// with present_key / present_value bound to past's own buffers (in place, as ebb binds them:
// past_present_share_buffer) and with ORT allocating them. Every scenario starts from the same
// seeded past buffers [B, Hkv, cap, D]:
//   first prompt      B 1, S 9, seqlens [8]            (S == total: past length 0)
//   padded prompt     B 2, S 8, seqlens [7, 4]
//   prompt chunk      B 1, S 6, seqlens [16]           (past 11)
//   decode            B 2, S 1, seqlens [20, 5]
//   decode at cap     B 1, S 1, seqlens [cap - 1]
// Prints one JSON line per scenario and mode: the largest |difference| of the output (over the
// rows that are not padding) and of present's rows [0, seqlens_k[b] + 1), each relative to the
// largest |value| of the reference; exits 1 when any is over --tolerance (default 1e-5). For the
// scenarios with B 2 it also runs each batch row alone (B 1, its own inputs, past and seqlens_k),
// in place, through both ops: ebb's op must give that row's output and present bit for bit (a
// row's attention does not depend on the rows beside it, so batched decode rows equal solo
// runs) and exits 1 otherwise; ORT's difference is printed ("ref_row_diff_rel"), not checked. Then
// inputs the op must refuse (a seqlens_k shorter than the batch, a key of the wrong width), one
// line each: exits 1 when the op runs one, or fails without naming the input.
// --bench N then times 12 decode steps at the end of the buffer (B 1, S 1, seqlens [cap - 1], in
// place), each on its own past buffers as a model's 12 layers are (so a long --cap streams the
// keys and values from DRAM: 12 x cap 2048 is 48 MB), N times per engine, alternating, after one
// warm-up round, and prints the medians in ms.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check_util.h"
#include "onnxruntime_cxx_api.h"

namespace {

constexpr const char* kTool = "gqa_check";

[[noreturn]] void Die(const std::string& why) { check_util::Die(kTool, why); }
long JsonInt(const std::string& json, const std::string& key) {
  return check_util::JsonInt(kTool, json, key);
}

struct Scenario {
  const char* name;
  long batch, seq;
  std::vector<int32_t> seqlens;
};

struct Result {
  std::vector<float> out, pk, pv;
  long present_cap = 0;
};

Result RunOnce(Ort::Session& s, const Scenario& sc, long heads, long kv, long d, long cap,
               bool packed, bool in_place, const std::vector<float>& q, const std::vector<float>& k,
               const std::vector<float>& v, const std::vector<float>& past_k,
               const std::vector<float>& past_v, long key_width = 0) {
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const long qw = packed ? (heads + 2 * kv) * d : heads * d;
  std::vector<float> qq = q, kk = k, vv = v;
  Result r;
  r.pk = past_k;  // the past buffers; in place, also the present ones
  r.pv = past_v;
  std::vector<int32_t> seqlens = sc.seqlens;
  int32_t total = *std::max_element(seqlens.begin(), seqlens.end()) + 1;
  std::vector<int64_t> qs = {sc.batch, sc.seq, qw}, ks = {sc.batch, sc.seq, kv * d},
                       ps = {sc.batch, kv, cap, d}, ss = {static_cast<int64_t>(sc.seqlens.size())},
                       ts = {1};
  if (key_width > 0) ks[2] = key_width;  // a refusal case: key and value of another width
  std::vector<const char*> names = {"query"};
  std::vector<Ort::Value> in;
  in.push_back(Ort::Value::CreateTensor<float>(mem, qq.data(), qq.size(), qs.data(), 3));
  if (!packed) {
    names.push_back("key");
    names.push_back("value");
    in.push_back(Ort::Value::CreateTensor<float>(mem, kk.data(), kk.size(), ks.data(), 3));
    in.push_back(Ort::Value::CreateTensor<float>(mem, vv.data(), vv.size(), ks.data(), 3));
  }
  names.insert(names.end(), {"past_key", "past_value", "seqlens_k", "total_sequence_length"});
  in.push_back(Ort::Value::CreateTensor<float>(mem, r.pk.data(), r.pk.size(), ps.data(), 4));
  in.push_back(Ort::Value::CreateTensor<float>(mem, r.pv.data(), r.pv.size(), ps.data(), 4));
  in.push_back(
      Ort::Value::CreateTensor<int32_t>(mem, seqlens.data(), seqlens.size(), ss.data(), 1));
  in.push_back(Ort::Value::CreateTensor<int32_t>(mem, &total, 1, ts.data(), 1));
  const char* out_names[] = {"output", "present_key", "present_value"};
  r.out.assign(static_cast<size_t>(sc.batch * sc.seq * heads * d), 0.f);
  std::vector<int64_t> os = {sc.batch, sc.seq, heads * d};
  if (in_place) {
    std::vector<Ort::Value> outs;
    outs.push_back(Ort::Value::CreateTensor<float>(mem, r.out.data(), r.out.size(), os.data(), 3));
    outs.push_back(Ort::Value::CreateTensor<float>(mem, r.pk.data(), r.pk.size(), ps.data(), 4));
    outs.push_back(Ort::Value::CreateTensor<float>(mem, r.pv.data(), r.pv.size(), ps.data(), 4));
    s.Run(Ort::RunOptions{}, names.data(), in.data(), in.size(), out_names, outs.data(), 3);
    r.present_cap = cap;
  } else {
    auto outs = s.Run(Ort::RunOptions{}, names.data(), in.data(), in.size(), out_names, 3);
    const float* o = outs[0].GetTensorData<float>();
    r.out.assign(o, o + r.out.size());
    const auto pshape = outs[1].GetTensorTypeAndShapeInfo().GetShape();
    r.present_cap = pshape[2];
    const size_t n = outs[1].GetTensorTypeAndShapeInfo().GetElementCount();
    r.pk.assign(outs[1].GetTensorData<float>(), outs[1].GetTensorData<float>() + n);
    r.pv.assign(outs[2].GetTensorData<float>(), outs[2].GetTensorData<float>() + n);
  }
  return r;
}

// Row bi of a [B, ...] buffer whose rows hold `per` values each.
std::vector<float> RowOf(const std::vector<float>& all, long bi, long per) {
  return std::vector<float>(all.begin() + bi * per, all.begin() + (bi + 1) * per);
}

// Row bi's valid part of a batched result `b` against the same row run alone (`one`): its
// queries' outputs (all of them for a decode step, the unpadded ones of a padded prompt) and
// present rows [0, total). `diff`: the largest |x - y|; `unequal`: values whose bits differ (a NaN
// or a -0 against +0 counts).
struct RowCompare {
  double diff = 0;
  long unequal = 0;
  void Add(float x, float y) {
    diff = std::max(diff, std::fabs(static_cast<double>(x) - y));
    unequal += std::memcmp(&x, &y, sizeof x) != 0 ? 1 : 0;
  }
};
RowCompare RowDiff(const Result& b, const Result& one, long bi, long seq, long rows, long heads,
                   long kv, long d, long total) {
  RowCompare c;
  for (long s = 0; s < rows; ++s) {
    for (long i = 0; i < heads * d; ++i) {
      c.Add(b.out[static_cast<size_t>((bi * seq + s) * heads * d + i)],
            one.out[static_cast<size_t>(s * heads * d + i)]);
    }
  }
  for (long g = 0; g < kv; ++g) {
    for (long t = 0; t < total; ++t) {
      for (long i = 0; i < d; ++i) {
        const size_t at = static_cast<size_t>(((bi * kv + g) * b.present_cap + t) * d + i);
        const size_t at1 = static_cast<size_t>((g * one.present_cap + t) * d + i);
        c.Add(b.pk[at], one.pk[at1]);
        c.Add(b.pv[at], one.pv[at1]);
      }
    }
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::string prefix, library;
  long cap = 48;
  double tolerance = 1e-5;
  int bench = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      prefix = v;
    } else if (k == "--library") {
      library = v;
    } else if (k == "--cap") {
      cap = std::atol(v.c_str());
    } else if (k == "--bench") {
      bench = std::atoi(v.c_str());
    } else if (k == "--tolerance") {
      tolerance = std::atof(v.c_str());
    } else {
      Die("unknown argument " + k);
    }
  }
  if (prefix.empty() || library.empty()) Die("usage: gqa_check --model PREFIX --library SO");
  const std::string json = check_util::ReadJson(kTool, prefix, "tools/gqa_model.py");
  const long heads = JsonInt(json, "heads"), kv = JsonInt(json, "kv_heads"),
             d = JsonInt(json, "head_size");
  const bool packed = check_util::JsonTrue(json, "packed");
  if (cap < 22 || cap > JsonInt(json, "positions")) Die("--cap must be 22 .. positions");

  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "gqa_check");
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(2);
  const std::string ref_path = prefix + "_ref.onnx", op_path = prefix + "_op.onnx";
  Ort::Session ref(env, ref_path.c_str(), so);
  Ort::SessionOptions so_op = so.Clone();
  so_op.RegisterCustomOpsLibrary(library.c_str());
  Ort::Session op(env, op_path.c_str(), so_op);

  const std::vector<Scenario> scenarios = {
      {"first prompt", 1, 9, {8}},
      {"padded prompt", 2, 8, {7, 4}},
      {"prompt chunk", 1, 6, {16}},
      {"decode", 2, 1, {20, 5}},
      {"decode at cap", 1, 1, {static_cast<int32_t>(cap - 1)}},
  };
  bool ok = true;
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (const Scenario& sc : scenarios) {
    const long qw = packed ? (heads + 2 * kv) * d : heads * d;
    std::vector<float> q(static_cast<size_t>(sc.batch * sc.seq * qw)),
        k(static_cast<size_t>(sc.batch * sc.seq * kv * d)), v(k.size()),
        past_k(static_cast<size_t>(sc.batch * kv * cap * d)), past_v(past_k.size());
    for (auto* vec : {&q, &k, &v, &past_k, &past_v})
      for (float& x : *vec) x = dist(rng);
    // first prompts: S == total, so the kernel sees no past; only its new rows matter
    for (bool in_place : {true, false}) {
      Result a = RunOnce(ref, sc, heads, kv, d, cap, packed, in_place, q, k, v, past_k, past_v);
      Result b = RunOnce(op, sc, heads, kv, d, cap, packed, in_place, q, k, v, past_k, past_v);
      const bool first =
          sc.seq > 1 && sc.seq == *std::max_element(sc.seqlens.begin(), sc.seqlens.end()) + 1;
      double out_max = 0, out_diff = 0, kv_max = 0, kv_diff = 0;
      for (long bi = 0; bi < sc.batch; ++bi) {
        const long total = sc.seqlens[static_cast<size_t>(bi)] + 1;
        const long rows = first ? std::min(sc.seq, total) : sc.seq;  // padded queries excluded
        for (long s = 0; s < rows; ++s) {
          for (long i = 0; i < heads * d; ++i) {
            const size_t at = static_cast<size_t>((bi * sc.seq + s) * heads * d + i);
            out_max = std::max(out_max, std::fabs(static_cast<double>(a.out[at])));
            out_diff = std::max(out_diff, std::fabs(static_cast<double>(a.out[at]) - b.out[at]));
          }
        }
        if (a.present_cap != b.present_cap) Die("present capacity differs");
        for (long g = 0; g < kv; ++g) {
          for (long t = 0; t < total; ++t) {
            for (long i = 0; i < d; ++i) {
              const size_t at = static_cast<size_t>(((bi * kv + g) * a.present_cap + t) * d + i);
              for (const auto& [x, y] :
                   {std::pair{a.pk[at], b.pk[at]}, std::pair{a.pv[at], b.pv[at]}}) {
                kv_max = std::max(kv_max, std::fabs(static_cast<double>(x)));
                kv_diff = std::max(kv_diff, std::fabs(static_cast<double>(x) - y));
              }
            }
          }
        }
      }
      const double out_rel = out_diff / std::max(out_max, 1e-30);
      const double kv_rel = kv_diff / std::max(kv_max, 1e-30);
      const bool pass = out_rel <= tolerance && kv_rel <= tolerance;
      ok = ok && pass;
      std::printf(
          "{\"scenario\": \"%s\", \"in_place\": %s, \"output_diff_rel\": %.3e, "
          "\"present_diff_rel\": "
          "%.3e, \"pass\": %s}\n",
          sc.name, in_place ? "true" : "false", out_rel, kv_rel, pass ? "true" : "false");
    }
    if (sc.batch > 1) {
      // Each row alone, in place, against its row of the batched run.
      const long qw1 = sc.seq * qw, kw1 = sc.seq * kv * d, pw1 = kv * cap * d;
      Result a = RunOnce(ref, sc, heads, kv, d, cap, packed, true, q, k, v, past_k, past_v);
      Result b = RunOnce(op, sc, heads, kv, d, cap, packed, true, q, k, v, past_k, past_v);
      const bool first =
          sc.seq > 1 && sc.seq == *std::max_element(sc.seqlens.begin(), sc.seqlens.end()) + 1;
      double ref_diff = 0, ref_max = 0;
      long op_unequal = 0;
      for (float x : a.out) ref_max = std::max(ref_max, std::fabs(static_cast<double>(x)));
      for (long bi = 0; bi < sc.batch; ++bi) {
        const int32_t len = sc.seqlens[static_cast<size_t>(bi)];
        // A padded prompt's row alone is its own unpadded prompt: S = its length + 1.
        const long seq1 = first ? std::min<long>(sc.seq, len + 1) : sc.seq;
        const Scenario one{sc.name, 1, seq1, {len}};
        auto head = [](const std::vector<float>& row, long n) {
          return std::vector<float>(row.begin(), row.begin() + n);
        };
        const auto q1 = head(RowOf(q, bi, qw1), seq1 * qw),
                   k1 = head(RowOf(k, bi, kw1), seq1 * kv * d),
                   v1 = head(RowOf(v, bi, kw1), seq1 * kv * d), pk1 = RowOf(past_k, bi, pw1),
                   pv1 = RowOf(past_v, bi, pw1);
        const Result a1 = RunOnce(ref, one, heads, kv, d, cap, packed, true, q1, k1, v1, pk1, pv1);
        const Result b1 = RunOnce(op, one, heads, kv, d, cap, packed, true, q1, k1, v1, pk1, pv1);
        ref_diff = std::max(ref_diff, RowDiff(a, a1, bi, sc.seq, seq1, heads, kv, d, len + 1).diff);
        op_unequal += RowDiff(b, b1, bi, sc.seq, seq1, heads, kv, d, len + 1).unequal;
      }
      const bool pass = op_unequal == 0;
      ok = ok && pass;
      std::printf(
          "{\"scenario\": \"%s\", \"rows_alone\": true, \"op_values_unlike_alone\": %ld, "
          "\"ref_row_diff_rel\": %.3e, \"pass\": %s}\n",
          sc.name, op_unequal, ref_diff / std::max(ref_max, 1e-30), pass ? "true" : "false");
    }
  }
  // Inputs the op must refuse, each with an error that names the input (a seqlens_k shorter than
  // the batch would otherwise be read past its end).
  struct Refusal {
    const char* name;
    Scenario sc;
    long key_width;  // 0: the right width
    const char* says;
  };
  std::vector<Refusal> refusals = {
      {"seqlens_k shorter than the batch", {"", 2, 1, {5}}, 0, "seqlens_k must hold one value"},
  };
  if (!packed) {
    refusals.push_back(
        {"key and value of another width", {"", 1, 1, {5}}, kv * d + 16, "key and value must"});
  }
  for (const Refusal& rf : refusals) {
    const long qw = packed ? (heads + 2 * kv) * d : heads * d;
    const long kw = rf.key_width > 0 ? rf.key_width : kv * d;
    std::vector<float> q(static_cast<size_t>(rf.sc.batch * rf.sc.seq * qw), 0.5f),
        k(static_cast<size_t>(rf.sc.batch * rf.sc.seq * kw), 0.5f), v(k.size(), 0.5f),
        past_k(static_cast<size_t>(rf.sc.batch * kv * cap * d), 0.5f), past_v(past_k.size(), 0.5f);
    std::string error;
    try {
      RunOnce(op, rf.sc, heads, kv, d, cap, packed, true, q, k, v, past_k, past_v, rf.key_width);
    } catch (const Ort::Exception& e) {
      error = e.what();
    }
    const bool pass = error.find(rf.says) != std::string::npos;
    ok = ok && pass;
    std::printf("{\"refusal\": \"%s\", \"error\": \"%s\", \"pass\": %s}\n", rf.name,
                error.substr(0, 160).c_str(), pass ? "true" : "false");
  }
  if (bench > 0) {
    // 12 past buffers ("layers"), one per call in turn, so that a cap past the caches streams
    // the keys and values from DRAM as a decode step does; bound in place, created once.
    constexpr int kLayers = 12;
    const long qw = packed ? (heads + 2 * kv) * d : heads * d;
    std::vector<float> q(static_cast<size_t>(qw)), k(static_cast<size_t>(kv * d)), v(k.size()),
        out(static_cast<size_t>(heads * d));
    std::vector<std::vector<float>> pk(kLayers), pv(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      pk[l].resize(static_cast<size_t>(kv * cap * d));
      pv[l].resize(pk[l].size());
      for (float& x : pk[l]) x = dist(rng);
      for (float& x : pv[l]) x = dist(rng);
    }
    for (auto* vec : {&q, &k, &v})
      for (float& x : *vec) x = dist(rng);
    int32_t seqlen = static_cast<int32_t>(cap - 1), total = static_cast<int32_t>(cap);
    Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    std::vector<int64_t> qs = {1, 1, qw}, ks = {1, 1, kv * d}, ps = {1, kv, cap, d},
                         os = {1, 1, heads * d}, one = {1};
    auto run = [&](Ort::Session& s, int l) {
      std::vector<const char*> names = {"query"};
      std::vector<Ort::Value> in;
      in.push_back(Ort::Value::CreateTensor<float>(mem, q.data(), q.size(), qs.data(), 3));
      if (!packed) {
        names.push_back("key");
        names.push_back("value");
        in.push_back(Ort::Value::CreateTensor<float>(mem, k.data(), k.size(), ks.data(), 3));
        in.push_back(Ort::Value::CreateTensor<float>(mem, v.data(), v.size(), ks.data(), 3));
      }
      names.insert(names.end(), {"past_key", "past_value", "seqlens_k", "total_sequence_length"});
      in.push_back(Ort::Value::CreateTensor<float>(mem, pk[l].data(), pk[l].size(), ps.data(), 4));
      in.push_back(Ort::Value::CreateTensor<float>(mem, pv[l].data(), pv[l].size(), ps.data(), 4));
      in.push_back(Ort::Value::CreateTensor<int32_t>(mem, &seqlen, 1, one.data(), 1));
      in.push_back(Ort::Value::CreateTensor<int32_t>(mem, &total, 1, one.data(), 1));
      const char* out_names[] = {"output", "present_key", "present_value"};
      std::vector<Ort::Value> outs;
      outs.push_back(Ort::Value::CreateTensor<float>(mem, out.data(), out.size(), os.data(), 3));
      outs.push_back(
          Ort::Value::CreateTensor<float>(mem, pk[l].data(), pk[l].size(), ps.data(), 4));
      outs.push_back(
          Ort::Value::CreateTensor<float>(mem, pv[l].data(), pv[l].size(), ps.data(), 4));
      s.Run(Ort::RunOptions{}, names.data(), in.data(), in.size(), out_names, outs.data(), 3);
    };
    std::vector<double> times[2];
    Ort::Session* engines[2] = {&ref, &op};
    for (int i = 0; i < bench + 1; ++i) {
      for (int e = 0; e < 2; ++e) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int l = 0; l < kLayers; ++l) run(*engines[e], l);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (i >= 1) times[e].push_back(ms);
      }
    }
    for (auto& t : times) std::sort(t.begin(), t.end());
    std::printf(
        "{\"bench\": \"12 decode steps\", \"cap\": %ld, \"ref_ms\": %.4f, \"op_ms\": %.4f}\n", cap,
        times[0][times[0].size() / 2], times[1][times[1].size() / 2]);
  }
  return ok ? 0 : 1;
}
