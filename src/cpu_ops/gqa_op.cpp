// src/cpu_ops/gqa_op.cpp — ebb.cpu.GroupQueryAttention (gqa_op.h).
#include "gqa_op.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cpu_ops.h"
#include "gqa_kernels.h"

namespace ebb_cpu_ops {
namespace {

constexpr const char* kOpType = "GroupQueryAttention";
constexpr long kQueryBlock = 16;  // query positions per task (prefill); decode has 1
constexpr int kMaxGroup = 16;     // query heads per kv head
constexpr long kMaxHead = 128;    // head size: 16, 32, 48, 64, 96 or 128 (gqa_kernels.h's dispatch)

bool SupportedHead(long d) {
  return d == 16 || d == 32 || d == 48 || d == 64 || d == 96 || d == 128;
}

OrtStatus* Error(const std::string& what) { return OpError(kOpType, what); }

struct Shapes {
  long batch = 0, seq = 0, heads = 0, kv_heads = 0, head = 0, past_cap = 0, present_cap = 0;
  long rot_half = 0;  // R / 2 (0: no rotary)
  long rot_rows = 0;  // positions the cos/sin caches hold
  bool packed = false, first_prompt = false;
};

struct Call {
  const Shapes* sh;
  const struct GqaKernel* k;
  const float *q, *key, *value;
  const void *past_k, *past_v;  // float or fp16 (`f16`), as present
  const float *cos, *sin;
  const int32_t* seqlens;
  float* out;
  void *present_k, *present_v;
  bool in_place, f16;
};

// x[0 .. 2 half) rotated at one position (cos/sin rows of `half` values).
void Rotate(float* x, const float* c, const float* s, long half, bool interleaved) {
  if (interleaved) {
    for (long i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c[i] - b * s[i];
      x[2 * i + 1] = b * c[i] + a * s[i];
    }
  } else {
    for (long i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * c[i] - b * s[i];
      x[i + half] = b * c[i] + a * s[i];
    }
  }
}

// One row of d floats into a cache row (float: copied; fp16: converted, round to nearest even).
inline void StoreRow(const GqaKernels&, float* dst, const float* src, long d) {
  std::memcpy(dst, src, static_cast<size_t>(d) * sizeof(float));
}
inline void StoreRow(const GqaKernels& kernels, uint16_t* dst, const float* src, long d) {
  kernels.to_f16(dst, src, d);
}

// The vector functions for a cache of element C.
inline void ScoresFor(const GqaKernels& k, long hc, const float* q, const float* rows, long d,
                      long t0, long t1, float* sc, long st) {
  k.scores_f32(hc, q, rows, d, t0, t1, sc, st);
}
inline void ScoresFor(const GqaKernels& k, long hc, const float* q, const uint16_t* rows, long d,
                      long t0, long t1, float* sc, long st) {
  k.scores_f16(hc, q, rows, d, t0, t1, sc, st);
}
inline void OutputFor(const GqaKernels& k, long hc, const float* p, long st, const float* is,
                      const float* rows, long d, long t0, long t1, float* out) {
  k.output_f32(hc, p, st, is, rows, d, t0, t1, out);
}
inline void OutputFor(const GqaKernels& k, long hc, const float* p, long st, const float* is,
                      const uint16_t* rows, long d, long t0, long t1, float* out) {
  k.output_f16(hc, p, st, is, rows, d, t0, t1, out);
}

struct GqaKernel {
  const GqaKernels* kernels = nullptr;  // this CPU's vector functions (never null once created)
  long heads = 0, kv_heads = 0, local_window = -1;
  float scale = 0.f, softcap = 0.f;
  bool rotary = false, interleaved = false, smooth = false;

  long PastLen(const Shapes& sh, const int32_t* seqlens, long b) const {
    return sh.first_prompt ? 0 : static_cast<long>(seqlens[b]) + 1 - sh.seq;
  }

  // Token s of row b: pointers to its query (head 0), key and value rows (kv head 0).
  static const float* QueryRow(const Call& c, long b, long s) {
    const Shapes& sh = *c.sh;
    const long width = sh.packed ? (sh.heads + 2 * sh.kv_heads) * sh.head : sh.heads * sh.head;
    return c.q + (b * sh.seq + s) * width;
  }
  static const float* KeyRow(const Call& c, long b, long s) {
    const Shapes& sh = *c.sh;
    if (sh.packed) return QueryRow(c, b, s) + sh.heads * sh.head;
    return c.key + (b * sh.seq + s) * sh.kv_heads * sh.head;
  }
  static const float* ValueRow(const Call& c, long b, long s) {
    const Shapes& sh = *c.sh;
    if (sh.packed) return QueryRow(c, b, s) + (sh.heads + sh.kv_heads) * sh.head;
    return c.value + (b * sh.seq + s) * sh.kv_heads * sh.head;
  }

  // Task part 1, per (b, g): past rows into present (when not in place), then the new tokens'
  // rotated keys and values. C: the cache's element (float, or uint16_t for fp16).
  template <typename C>
  static void Append(const Call& c, long b, long g) {
    const Shapes& sh = *c.sh;
    const long d = sh.head, past = c.k->PastLen(sh, c.seqlens, b);
    C* pk = static_cast<C*>(c.present_k) + (b * sh.kv_heads + g) * sh.present_cap * d;
    C* pv = static_cast<C*>(c.present_v) + (b * sh.kv_heads + g) * sh.present_cap * d;
    if (!c.in_place && past > 0) {
      const C* sk = static_cast<const C*>(c.past_k) + (b * sh.kv_heads + g) * sh.past_cap * d;
      const C* sv = static_cast<const C*>(c.past_v) + (b * sh.kv_heads + g) * sh.past_cap * d;
      std::memcpy(pk, sk, static_cast<size_t>(past * d) * sizeof(C));
      std::memcpy(pv, sv, static_cast<size_t>(past * d) * sizeof(C));
    }
    float row[kMaxHead];
    for (long s = 0; s < sh.seq; ++s) {
      const long pos = past + s;  // in [0, present_cap): ComputeV2 checked every row
      std::memcpy(row, KeyRow(c, b, s) + g * d, static_cast<size_t>(d) * sizeof(float));
      if (sh.rot_half) {
        Rotate(row, c.cos + pos * sh.rot_half, c.sin + pos * sh.rot_half, sh.rot_half,
               c.k->interleaved);
      }
      StoreRow(*c.k->kernels, pk + pos * d, row, d);
      StoreRow(*c.k->kernels, pv + pos * d, ValueRow(c, b, s) + g * d, d);
    }
  }

  // Task part 2, per (b, g, queries [s0, s1)): attention of the group's query heads.
  template <typename C>
  static void Attend(const Call& c, long b, long g, long s0, long s1) {
    const Shapes& sh = *c.sh;
    const GqaKernel& k = *c.k;
    const GqaKernels& kern = *k.kernels;
    const long d = sh.head, hg = sh.heads / sh.kv_heads, chunk = kern.max_heads(d);
    const long past = k.PastLen(sh, c.seqlens, b);
    const C* pk = static_cast<const C*>(c.present_k) + (b * sh.kv_heads + g) * sh.present_cap * d;
    const C* pv = static_cast<const C*>(c.present_v) + (b * sh.kv_heads + g) * sh.present_cap * d;
    const long cap = std::min(sh.present_cap, past + sh.seq);  // keys written so far
    const long total_b = std::min(cap, static_cast<long>(c.seqlens[b]) + 1);
    thread_local Aligned scratch;
    // [hg][d] rotated, scaled queries; [hg][cap rounded up to 16] scores
    const long stride = (cap + 15) / 16 * 16;
    scratch.Reset(static_cast<size_t>(hg * d + hg * stride) * sizeof(float));
    float* qs = reinterpret_cast<float*>(scratch.data);
    float* scores = qs + hg * d;
    const float scale = k.scale > 0.f ? k.scale : 1.f / std::sqrt(static_cast<float>(d));
    for (long s = s0; s < s1; ++s) {
      const long pos = past + s;
      // keys [start, end) are visible; a padded query of a first prompt (s >= total_b) sees the
      // row's valid keys, as ORT's kernel gives it
      const long end = std::min(pos + 1, total_b);
      long start = 0;
      if (k.local_window >= 0 && end > k.local_window) start = end - k.local_window;
      float* orow = c.out + (b * sh.seq + s) * sh.heads * d + g * hg * d;
      if (end <= start) {
        std::memset(orow, 0, static_cast<size_t>(hg * d) * sizeof(float));
        continue;
      }
      for (long h = 0; h < hg; ++h) {
        float* qh = qs + h * d;
        std::memcpy(qh, QueryRow(c, b, s) + (g * hg + h) * d,
                    static_cast<size_t>(d) * sizeof(float));
        if (sh.rot_half) {
          Rotate(qh, c.cos + pos * sh.rot_half, c.sin + pos * sh.rot_half, sh.rot_half,
                 k.interleaved);
        }
        if (k.softcap <= 0.f) {
          for (long i = 0; i < d; ++i) qh[i] *= scale;
        }
      }
      // Scores: each key row read once for the group's heads (`chunk` at a time).
      for (long h0 = 0; h0 < hg; h0 += chunk) {
        ScoresFor(kern, std::min(chunk, hg - h0), qs + h0 * d, pk, d, start, end,
                  scores + h0 * stride, stride);
      }
      // Softmax per head over [start, end).
      float inv_sum[kMaxGroup];
      for (long h = 0; h < hg; ++h) {
        float* sc = scores + h * stride;
        if (k.softcap > 0.f) {
          for (long t = start; t < end; ++t)
            sc[t] = k.softcap * std::tanh(sc[t] * scale / k.softcap);
        }
        float mx = k.smooth ? 0.f : -std::numeric_limits<float>::infinity();
        for (long t = start; t < end; ++t) mx = std::max(mx, sc[t]);
        float sum = kern.exp_sum(sc + start, end - start, mx);
        if (k.smooth) sum += std::exp(-mx);
        inv_sum[h] = 1.f / sum;
      }
      // Output: each value row read once for the group's heads (`chunk` at a time).
      for (long h0 = 0; h0 < hg; h0 += chunk) {
        OutputFor(kern, std::min(chunk, hg - h0), scores + h0 * stride, stride, inv_sum + h0, pv, d,
                  start, end, orow + h0 * d);
      }
    }
  }

  static void AppendTask(void* user, size_t i) {
    const Call& c = *static_cast<const Call*>(user);
    const long b = static_cast<long>(i) / c.sh->kv_heads, g = static_cast<long>(i) % c.sh->kv_heads;
    if (c.f16) {
      Append<uint16_t>(c, b, g);
    } else {
      Append<float>(c, b, g);
    }
  }

  static void AttendTask(void* user, size_t i) {
    const Call& c = *static_cast<const Call*>(user);
    const long blocks = (c.sh->seq + kQueryBlock - 1) / kQueryBlock;
    const long bg = static_cast<long>(i) / blocks, blk = static_cast<long>(i) % blocks;
    const long s0 = blk * kQueryBlock, s1 = std::min(c.sh->seq, s0 + kQueryBlock);
    if (c.f16) {
      Attend<uint16_t>(c, bg / c.sh->kv_heads, bg % c.sh->kv_heads, s0, s1);
    } else {
      Attend<float>(c, bg / c.sh->kv_heads, bg % c.sh->kv_heads, s0, s1);
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      const size_t n_in = ctx.GetInputCount();
      auto input = [&](size_t i) -> Ort::ConstValue {
        if (i >= n_in) return Ort::ConstValue{nullptr};
        return ctx.GetInput(i);
      };
      Ort::ConstValue q = input(0), key = input(1), value = input(2), past_k = input(3),
                      past_v = input(4), seqlens = input(5), total = input(6), cos = input(7),
                      sin = input(8);
      if (!static_cast<const OrtValue*>(past_k) || !static_cast<const OrtValue*>(past_v) ||
          !static_cast<const OrtValue*>(seqlens) || !static_cast<const OrtValue*>(total)) {
        return Error("needs past_key, past_value, seqlens_k and total_sequence_length");
      }
      Shapes sh;
      const std::vector<int64_t> qshape = q.GetTensorTypeAndShapeInfo().GetShape();
      const std::vector<int64_t> pshape = past_k.GetTensorTypeAndShapeInfo().GetShape();
      const ONNXTensorElementDataType cache_type =
          past_k.GetTensorTypeAndShapeInfo().GetElementType();
      if (past_v.GetTensorTypeAndShapeInfo().GetElementType() != cache_type ||
          (cache_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT &&
           cache_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16)) {
        return Error("past_key and past_value must both be float or both float16");
      }
      if (qshape.size() != 3 || pshape.size() != 4 ||
          past_v.GetTensorTypeAndShapeInfo().GetShape() != pshape) {
        return Error(
            "query must be [B, S, hidden] and past_key and past_value [B, kv_heads, P, "
            "head_size], the same shape");
      }
      sh.batch = qshape[0];
      sh.seq = qshape[1];
      sh.heads = heads;
      sh.kv_heads = kv_heads;
      sh.packed = !static_cast<const OrtValue*>(key);
      sh.head = pshape[3];
      sh.past_cap = pshape[2];
      const long width = sh.packed ? (heads + 2 * kv_heads) * sh.head : heads * sh.head;
      if (qshape[2] != width || pshape[0] != sh.batch || pshape[1] != kv_heads ||
          !SupportedHead(sh.head) || heads / kv_heads > kMaxGroup) {
        return Error("unsupported shapes: query [" + std::to_string(qshape[0]) + ", " +
                     std::to_string(qshape[1]) + ", " + std::to_string(qshape[2]) +
                     "], past_key head size " + std::to_string(sh.head) +
                     " (the kernel takes head_size 16, 32, 48, 64, 96 or 128 and at most 16 "
                     "query heads per kv head; keep this node com.microsoft)");
      }
      if (seqlens.GetTensorTypeAndShapeInfo().GetElementCount() != static_cast<size_t>(sh.batch) ||
          total.GetTensorTypeAndShapeInfo().GetElementCount() != 1) {
        return Error("seqlens_k must hold one value per batch row (" + std::to_string(sh.batch) +
                     ") and total_sequence_length one value");
      }
      if (!sh.packed) {
        const std::vector<int64_t> kv_in = {sh.batch, sh.seq, kv_heads * sh.head};
        if (!static_cast<const OrtValue*>(value) ||
            key.GetTensorTypeAndShapeInfo().GetShape() != kv_in ||
            value.GetTensorTypeAndShapeInfo().GetShape() != kv_in) {
          return Error("key and value must both be [B, S, kv_heads * head_size] = [" +
                       std::to_string(sh.batch) + ", " + std::to_string(sh.seq) + ", " +
                       std::to_string(kv_heads * sh.head) + "], or both absent (packed query)");
        }
      }
      const int32_t total_len = *total.GetTensorData<int32_t>();
      sh.present_cap = std::max<long>(sh.past_cap, total_len);
      sh.first_prompt = sh.seq > 1 && sh.seq == total_len;
      if (rotary) {
        if (!static_cast<const OrtValue*>(cos) || !static_cast<const OrtValue*>(sin)) {
          return Error("do_rotary needs cos_cache and sin_cache");
        }
        const std::vector<int64_t> cshape = cos.GetTensorTypeAndShapeInfo().GetShape();
        sh.rot_half = cshape.size() == 2 ? cshape[1] : 0;
        if (sh.rot_half <= 0 || 2 * sh.rot_half > sh.head || sh.rot_half % 8 ||
            sin.GetTensorTypeAndShapeInfo().GetShape() != cshape) {
          return Error(
              "cos_cache and sin_cache must both be [positions, rotary_dim / 2] with "
              "rotary_dim / 2 a multiple of 8 and at most head_size / 2");
        }
        sh.rot_rows = cshape[0];
      }
      const std::vector<int64_t> out_shape = {sh.batch, sh.seq, heads * sh.head};
      const std::vector<int64_t> kv_shape = {sh.batch, kv_heads, sh.present_cap, sh.head};
      Ort::UnownedValue out = ctx.GetOutput(0, out_shape);
      Ort::UnownedValue pk = ctx.GetOutput(1, kv_shape);
      Ort::UnownedValue pv = ctx.GetOutput(2, kv_shape);
      Call c{&sh,
             this,
             q.GetTensorData<float>(),
             sh.packed ? nullptr : key.GetTensorData<float>(),
             sh.packed ? nullptr : value.GetTensorData<float>(),
             past_k.GetTensorRawData(),
             past_v.GetTensorRawData(),
             sh.rot_half ? cos.GetTensorData<float>() : nullptr,
             sh.rot_half ? sin.GetTensorData<float>() : nullptr,
             seqlens.GetTensorData<int32_t>(),
             out.GetTensorMutableData<float>(),
             pk.GetTensorMutableRawData(),
             pv.GetTensorMutableRawData(),
             false,
             cache_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16};
      c.in_place = c.present_k == c.past_k && c.present_v == c.past_v;
      if (!c.in_place && (c.present_k == c.past_k || c.present_v == c.past_v)) {
        return Error("present_key and present_value must both share past's buffers or neither");
      }
      for (long b = 0; b < sh.batch; ++b) {
        const long past = PastLen(sh, c.seqlens, b);
        if (past < 0 || past + sh.seq > sh.present_cap || (!c.in_place && past > sh.past_cap)) {
          return Error("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(c.seqlens[b]) +
                       " does not fit " + std::to_string(sh.seq) + " new tokens into " +
                       std::to_string(sh.present_cap) + " positions");
        }
        if (sh.rot_half && past + sh.seq > sh.rot_rows) {
          return Error("position " + std::to_string(past + sh.seq - 1) + " is past cos_cache's " +
                       std::to_string(sh.rot_rows) + " rows");
        }
      }
      const size_t bg = static_cast<size_t>(sh.batch * kv_heads);
      Ort::ThrowOnError(g_api->KernelContext_ParallelFor(context, &AppendTask, bg, 0, &c));
      const size_t blocks = static_cast<size_t>((sh.seq + kQueryBlock - 1) / kQueryBlock);
      Ort::ThrowOnError(g_api->KernelContext_ParallelFor(context, &AttendTask, bg * blocks, 0, &c));
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }
};

// Copies input `from`'s dimensions (numbers and symbols) into an output type of `type`, with
// dimension `last` replaced by a number when it is >= 0.
OrtStatusPtr SetOutputLike(OrtShapeInferContext* ctx, size_t from, size_t to,
                           ONNXTensorElementDataType type, int64_t last) {
  OrtTensorTypeAndShapeInfo* in = nullptr;  // owned by ctx
  if (OrtStatusPtr st = g_api->ShapeInferContext_GetInputTypeShape(ctx, from, &in)) return st;
  size_t n = 0;
  if (OrtStatusPtr st = g_api->GetDimensionsCount(in, &n)) return st;
  std::vector<int64_t> dims(n);
  std::vector<const char*> syms(n);
  if (OrtStatusPtr st = g_api->GetDimensions(in, dims.data(), n)) return st;
  if (OrtStatusPtr st = g_api->GetSymbolicDimensions(in, syms.data(), n)) return st;
  if (last >= 0 && n > 0) {
    dims[n - 1] = last;
    syms[n - 1] = "";
  }
  OrtTensorTypeAndShapeInfo* out = nullptr;
  if (OrtStatusPtr st = g_api->CreateTensorTypeAndShapeInfo(&out)) return st;
  OrtStatusPtr st = g_api->SetTensorElementType(out, type);
  if (!st) st = g_api->SetDimensions(out, dims.data(), n);
  if (!st) st = g_api->SetSymbolicDimensions(out, syms.data(), n);
  if (!st) st = g_api->ShapeInferContext_SetOutputTypeShape(ctx, to, out);
  g_api->ReleaseTensorTypeAndShapeInfo(out);
  return st;
}

// Output types for ORT's graph: output float [B, S, num_heads * head_size] (head_size from
// past_key's last dimension, when known), present_* of past_*'s type and dimensions (ebb binds
// present to past's buffer).
OrtStatusPtr InferGqaOutputs(const OrtCustomOp*, OrtShapeInferContext* ctx) {
  OrtTensorTypeAndShapeInfo* past = nullptr;
  if (OrtStatusPtr st = g_api->ShapeInferContext_GetInputTypeShape(ctx, 3, &past)) return st;
  ONNXTensorElementDataType cache = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  if (OrtStatusPtr st = g_api->GetTensorElementType(past, &cache)) return st;
  size_t n = 0;
  if (OrtStatusPtr st = g_api->GetDimensionsCount(past, &n)) return st;
  std::vector<int64_t> dims(n);
  if (OrtStatusPtr st = g_api->GetDimensions(past, dims.data(), n)) return st;
  int64_t heads = 0;
  const OrtOpAttr* attr = nullptr;
  if (OrtStatusPtr st = g_api->ShapeInferContext_GetAttribute(ctx, "num_heads", &attr)) return st;
  size_t got = 0;
  if (OrtStatusPtr st = g_api->ReadOpAttr(attr, ORT_OP_ATTR_INT, &heads, sizeof(heads), &got)) {
    return st;
  }
  const int64_t width = n == 4 && dims[3] > 0 ? heads * dims[3] : -1;
  if (OrtStatusPtr st = SetOutputLike(ctx, 0, 0, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, width)) {
    return st;
  }
  if (OrtStatusPtr st = SetOutputLike(ctx, 3, 1, cache, -1)) return st;
  return SetOutputLike(ctx, 4, 2, cache, -1);
}

struct GqaOpDef : Ort::CustomOpBase<GqaOpDef, GqaKernel, true> {
  GqaOpDef() { OrtCustomOp::InferOutputShapeFn = &InferGqaOutputs; }

  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** out) const {
    (void)api;
    try {
      const GqaKernels* kernels = GqaKernelsFor();
      if (!kernels) {
        return Error(
            "this CPU has neither AVX-512 F/BW/VL nor AVX2 + FMA + F16C, which the kernel needs; "
            "run the model's original folder (com.microsoft GroupQueryAttention) instead");
      }
      Ort::ConstKernelInfo ki(info);
      auto k = std::make_unique<GqaKernel>();
      k->kernels = kernels;
      auto int_attr = [&](const char* name, int64_t def) {
        try {
          return ki.GetAttribute<int64_t>(name);
        } catch (const Ort::Exception&) {
          return def;
        }
      };
      auto float_attr = [&](const char* name, float def) {
        try {
          return ki.GetAttribute<float>(name);
        } catch (const Ort::Exception&) {
          return def;
        }
      };
      k->heads = static_cast<long>(int_attr("num_heads", 0));
      k->kv_heads = static_cast<long>(int_attr("kv_num_heads", 0));
      k->local_window = static_cast<long>(int_attr("local_window_size", -1));
      k->rotary = int_attr("do_rotary", 0) != 0;
      k->interleaved = int_attr("rotary_interleaved", 0) != 0;
      k->smooth = int_attr("smooth_softmax", 0) != 0;
      k->scale = float_attr("scale", 0.f);
      k->softcap = float_attr("softcap", 0.f);
      if (k->heads <= 0 || k->kv_heads <= 0 || k->heads % k->kv_heads) {
        return Error("node '" + ki.GetNodeName() + "': num_heads (" + std::to_string(k->heads) +
                     ") must be a positive multiple of kv_num_heads (" +
                     std::to_string(k->kv_heads) + ")");
      }
      if (ki.GetInputCount() > 9) {
        return Error("node '" + ki.GetNodeName() +
                     "': position_ids, attention_bias and head_sink "
                     "inputs are not supported");
      }
      *out = k.release();
      return nullptr;
    } catch (const Ort::Exception& e) {
      return Error(e.what());
    } catch (const std::exception& e) {
      return Error(e.what());
    }
  }

  const char* GetName() const { return kOpType; }
  size_t GetInputTypeCount() const { return 9; }
  // past and present: float or float16 (UNDEFINED: any type, checked in Compute); present's type
  // is past's (the model's declared value types).
  ONNXTensorElementDataType GetInputType(size_t i) const {
    if (i == 3 || i == 4) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    return i == 5 || i == 6 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32
                            : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t i) const {
    return i == 1 || i == 2 || i == 7 || i == 8 ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }
  size_t GetOutputTypeCount() const { return 3; }
  ONNXTensorElementDataType GetOutputType(size_t i) const {
    return i == 0 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
};

}  // namespace

const OrtCustomOp* GqaOp() {
  static GqaOpDef op;
  return &op;
}

}  // namespace ebb_cpu_ops
