"""Writes a synthesized llama/phi3 model folder (tools/synth_model.py) as a llama.cpp GGUF file
(architecture "llama") holding the same function, so that ebb and llama.cpp can be compared on
identical weights (bench/vs_llamacpp.py). Called by `synth_model.py --gguf OUT.gguf`; also
usable on an existing folder: `tools/synth_gguf.py MODEL_DIR OUT.gguf [--type q4_0|f16]`.

It reads the initializers back from the written model.onnx (and model.onnx.data), i.e. exactly
what ebb loads, rather than regenerating them.

What is identical and what is not
---------------------------------
  --type q4_0 (needs an int4 folder whose scales are fp16-representable, which synth_model.py
    writes when --gguf is given): every MatMulNBits weight, lm_head included, becomes a Q4_0
    tensor with the same 4-bit codes and the same scales (see Blocks below), so both engines multiply by the same
    values: MatMulNBits value = (q - 8) * scale, Q4_0 value = (q - 8) * d. Only the nibble
    order differs: MatMulNBits packs adjacent pairs (byte j = q[2j] | q[2j+1] << 4); Q4_0 packs
    the two halves of the block (byte j = q[j] | q[j+16] << 4).
  --type f16: the weights are rounded to fp16 (from fp32, or from the dequantized int4 values),
    so they are close, not identical. lm_head is F16 too.
  Always exact: token_embd (F32, as ebb keeps the embedding fp32), the RMSNorm gains (F32), rms
    epsilon, rope theta, head counts and sizes, context length.
  Arithmetic is not identical: ORT's MatMulNBits (accuracy_level 4) and ggml's Q4_0 kernels both
    quantize activations to int8 per block, but with their own rounding and accumulation orders,
    and the attention / softmax / rope kernels differ in float rounding; greedy tokens agree until
    a near-tie flips (bench/vs_llamacpp.py reports how many leading tokens agree).

Layout conversions
------------------
  Rows: ebb's matrices are [N, K] row blocks (MatMulNBits B [N, ceil(K/block), block/2]; fp32 MatMul W [K, N] is
    transposed); a GGUF matrix is ne = [K, N] (K contiguous), the same rows.
  phi3's fused qkv_proj rows [q; k; v] and gate_up_proj rows [gate; up] are split into
    attn_q/attn_k/attn_v and ffn_gate/ffn_up. Quantization is per row (blocks along K), so a
    row split keeps the quantized values exact.
  Blocks: MatMulNBits' block (synth_model.py --block-size, default 128) may be larger than Q4_0's
    32; each Q4_0 32-block then stores the scale (fp16-rounded) of the MatMulNBits block it lies
    in, so the values are still exactly the same. Block 16 (two scales per 32 weights) cannot be
    Q4_0 and is refused (f16 works).
  Rotary: ebb (GroupQueryAttention / RotaryEmbedding, interleaved=0) rotates pairs (i, i + d/2)
    of each head (the Hugging Face "rotate_half" form); llama.cpp's llama architecture rotates
    adjacent pairs (2i, 2i+1) with the same frequency theta^(-2i/d). So the q and k rows of each
    head are permuted: new row 2i = old row i, new row 2i+1 = old row i + d/2. Q.K per head is
    unchanged by permuting both the same way, and v / o are untouched.
  Norms: ebb's input_layernorm of layer i is attn_norm, post_attention_layernorm is ffn_norm, the
    final norm is output_norm (SkipSimplifiedLayerNormalization adds the residual first, as
    llama.cpp's graph does).
  Vocabulary: tokenizer.ggml.model "none" with llama.vocab_size = the embedding rows: llama.cpp
    (v0.5.0) then loads a vocabulary of that many placeholder tokens; the benchmark feeds token
    ids, so no tokenizer is needed. bos/eos ids are written for reference (llama.cpp's "none"
    vocabulary does not read them).
  qwen2 (q/k/v biases, not in the llama architecture) is refused.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

Q4_0_BLOCK = 32  # ggml's QK4_0
FILE_TYPE = {"q4_0": 2, "f16": 1}  # llama_ftype: LLAMA_FTYPE_MOSTLY_Q4_0 / MOSTLY_F16


class OnnxWeights:
    """Initializers of a model.onnx by name, as numpy arrays; external data is memory-mapped."""

    def __init__(self, model_dir):
        self.dir = model_dir
        m = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
        self.inits = {t.name: t for t in m.graph.initializer}
        self.nodes = list(m.graph.node)

    def __contains__(self, name):
        return name in self.inits

    def get(self, name):
        t = self.inits[name]
        if t.data_location != onnx.TensorProto.EXTERNAL:
            return numpy_helper.to_array(t)
        ext = {e.key: e.value for e in t.external_data}
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type) if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") \
            else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
        return np.memmap(os.path.join(self.dir, ext["location"]), dtype=np.dtype(dtype).newbyteorder("<"),
                         mode="r", offset=int(ext.get("offset", 0)), shape=tuple(t.dims))


def unpack_matmulnbits(qweight, scales, k):
    """MatMulNBits B uint8 [N, nb, block/2] (nb = ceil(K/block); byte j = q[2j] | q[2j+1] << 4)
    and scales [N * nb] -> codes uint8 [N, K] (0..15; value = (q - 8) * scale; the padding past K
    dropped) and the scale of each code's block, float32 [N, nb] (block = 2 * B.shape[2])."""
    n, nb, half = qweight.shape
    q = np.empty((n, nb, 2 * half), dtype=np.uint8)
    q[:, :, 0::2] = qweight & 0x0F
    q[:, :, 1::2] = qweight >> 4
    return q.reshape(n, nb * 2 * half)[:, :k], np.asarray(scales, dtype=np.float32).reshape(n, nb)


def q4_0_view(codes, scales, block):
    """Codes [N, K] and MatMulNBits scales [N, ceil(K/block)] -> codes [N, K/32, 32] and d
    [N, K/32]: each 32-block of Q4_0 takes the scale of the MatMulNBits block it lies in (block
    a multiple of 32), so the values (q - 8) * d are exactly MatMulNBits'."""
    n, k = codes.shape
    if block % Q4_0_BLOCK or k % Q4_0_BLOCK:
        raise SystemExit(f"--gguf-type q4_0 needs an int4 block size that is a multiple of {Q4_0_BLOCK} and "
                         f"K % {Q4_0_BLOCK} == 0 (block {block}, K {k}): a Q4_0 block holds one scale per "
                         f"{Q4_0_BLOCK} weights; use --gguf-type f16 or --block-size 32..256")
    d = np.repeat(scales, block // Q4_0_BLOCK, axis=1)[:, :k // Q4_0_BLOCK]
    return codes.reshape(n, k // Q4_0_BLOCK, Q4_0_BLOCK), d


def rope_row_order(n_heads, head_size):
    """Row index order that turns rotate_half rows into adjacent-pair rows, per head:
    new row h*d + 2i = old row h*d + i, new row h*d + 2i + 1 = old row h*d + i + d/2."""
    half = head_size // 2
    per_head = np.stack([np.arange(half), np.arange(half) + half], axis=1).reshape(-1)
    return (np.arange(n_heads)[:, None] * head_size + per_head[None, :]).reshape(-1)


class Matrix:
    """One ebb matmul weight seen as [N, K] rows, with a row selection applied lazily."""

    def __init__(self, w, onnx_name, k, n):
        base = onnx_name[1:].replace("/", ".")  # synth_model.Weights.matmul's initializer naming
        self.w, self.k = w, k
        if base + "NBits.qweight" in w:
            self.int4 = (base + "NBits.qweight", base + "NBits.scales")
        elif base + ".weight" in w:
            self.int4 = None
            self.fp32 = base + ".weight"
        else:
            raise SystemExit(f"{onnx_name}: no initializer {base}NBits.qweight or {base}.weight in the model")
        self.rows = np.arange(n)

    def select(self, rows):
        m = Matrix.__new__(Matrix)
        m.__dict__.update(self.__dict__)
        m.rows = self.rows[rows]
        return m

    def tensor(self, name, kind):
        """GGUF tensor `name` of these rows: kind "q4_0" (int4 only) or "f16"."""
        n, k = len(self.rows), self.k
        if kind == "q4_0":
            if self.int4 is None:
                raise SystemExit(f"--gguf-type q4_0 needs an int4 model ({name} is fp32); use --gguf-type f16")
            return gguf.Tensor(name, [k, n], gguf.GGML_Q4_0, self._q4_0)
        return gguf.Tensor(name, [k, n], gguf.GGML_F16, self._f16)

    def _chunks(self, step=1024):
        for r0 in range(0, len(self.rows), step):
            yield self.rows[r0:r0 + step]

    def _q4_0(self):
        qw, sc = self.w.get(self.int4[0]), self.w.get(self.int4[1])
        nb, block = qw.shape[1], 2 * qw.shape[2]
        sc = sc.reshape(-1, nb)
        for idx in self._chunks():
            q, s = unpack_matmulnbits(np.asarray(qw[idx]), sc[idx], self.k)
            yield gguf.q4_0_blocks(*q4_0_view(q, s, block))

    def _f16(self):
        if self.int4 is None:
            wt = self.w.get(self.fp32)  # [K, N]
            for idx in self._chunks():
                yield np.ascontiguousarray(np.asarray(wt[:, idx]).T).astype("<f2")
            return
        qw, sc = self.w.get(self.int4[0]), self.w.get(self.int4[1])
        nb, block = qw.shape[1], 2 * qw.shape[2]
        sc = sc.reshape(-1, nb)
        for idx in self._chunks():
            q, s = unpack_matmulnbits(np.asarray(qw[idx]), sc[idx], self.k)
            d = np.repeat(s, block, axis=1)[:, :self.k]
            yield ((q.astype(np.float32) - 8.0) * d).astype("<f2")


def f32_tensor(name, arr):
    arr = np.asarray(arr, dtype=np.float32)
    ne = list(reversed(arr.shape))
    return gguf.Tensor(name, ne, gguf.GGML_F32, lambda: (np.ascontiguousarray(arr, dtype="<f4"),))


def convert(model_dir, out_path, kind="q4_0"):
    """Writes out_path from the synth folder model_dir. Returns a summary dict."""
    with open(os.path.join(model_dir, "synth_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    with open(os.path.join(model_dir, "genai_config.json"), encoding="utf-8") as f:
        gcfg = json.load(f)["model"]
    fam, d = info["family"], info["dims"]
    if fam not in ("llama", "phi3"):
        raise SystemExit(f"--gguf supports the llama and phi3 families, not {fam}"
                         + (" (its q/k/v biases are not part of llama.cpp's llama architecture)" if fam == "qwen2" else ""))
    if kind not in FILE_TYPE:
        raise SystemExit(f"--gguf-type must be q4_0 or f16, not {kind}")
    H, nh, nkv, hd, I, V, L = (d[k] for k in ("hidden", "heads", "kv_heads", "head_size", "intermediate", "vocab", "layers"))
    qsz, kvsz = nh * hd, nkv * hd
    w = OnnxWeights(model_dir)
    q_order, k_order = rope_row_order(nh, hd), rope_row_order(nkv, hd)
    # the RMSNorm epsilon the graph uses (every SkipSimplifiedLayerNormalization carries it)
    eps = next(a.f for n in w.nodes if n.op_type == "SkipSimplifiedLayerNormalization"
               for a in n.attribute if a.name == "epsilon")

    tensors = []
    emb = w.get("model.embed_tokens.weight")
    if emb.shape != (V, H):
        raise SystemExit(f"embedding is {emb.shape}, expected {(V, H)}")
    tensors.append(gguf.Tensor("token_embd.weight", [H, V], gguf.GGML_F32,
                               lambda: (np.asarray(emb[r0:r0 + 4096], dtype="<f4") for r0 in range(0, V, 4096))))
    for i in range(L):
        pre, blk = f"/model/layers.{i}", f"blk.{i}"
        tensors.append(f32_tensor(f"{blk}.attn_norm.weight", w.get(f"model.layers.{i}.input_layernorm.weight")))
        if fam == "phi3":
            qkv = Matrix(w, f"{pre}/attn/qkv_proj/MatMul", H, qsz + 2 * kvsz)
            mq, mk, mv = qkv.select(slice(0, qsz)), qkv.select(slice(qsz, qsz + kvsz)), qkv.select(slice(qsz + kvsz, None))
        else:
            mq = Matrix(w, f"{pre}/attn/q_proj/MatMul", H, qsz)
            mk = Matrix(w, f"{pre}/attn/k_proj/MatMul", H, kvsz)
            mv = Matrix(w, f"{pre}/attn/v_proj/MatMul", H, kvsz)
        tensors.append(mq.select(q_order).tensor(f"{blk}.attn_q.weight", kind))
        tensors.append(mk.select(k_order).tensor(f"{blk}.attn_k.weight", kind))
        tensors.append(mv.tensor(f"{blk}.attn_v.weight", kind))
        tensors.append(Matrix(w, f"{pre}/attn/o_proj/MatMul", qsz, H).tensor(f"{blk}.attn_output.weight", kind))
        tensors.append(f32_tensor(f"{blk}.ffn_norm.weight", w.get(f"model.layers.{i}.post_attention_layernorm.weight")))
        if fam == "phi3":
            gu = Matrix(w, f"{pre}/mlp/gate_up_proj/MatMul", H, 2 * I)
            mg, mu = gu.select(slice(0, I)), gu.select(slice(I, None))
        else:
            mg = Matrix(w, f"{pre}/mlp/gate_proj/MatMul", H, I)
            mu = Matrix(w, f"{pre}/mlp/up_proj/MatMul", H, I)
        tensors.append(mg.tensor(f"{blk}.ffn_gate.weight", kind))
        tensors.append(mu.tensor(f"{blk}.ffn_up.weight", kind))
        tensors.append(Matrix(w, f"{pre}/mlp/down_proj/MatMul", I, H).tensor(f"{blk}.ffn_down.weight", kind))
    tensors.append(f32_tensor("output_norm.weight", w.get(f"model.layers.{L}.final_norm_layernorm.weight")))
    tensors.append(Matrix(w, "/lm_head/MatMul", H, V).tensor("output.weight", kind))

    eos = gcfg["eos_token_id"]
    eos = eos[0] if isinstance(eos, list) else eos
    A = "llama"
    meta = [
        ("general.architecture", gguf.T_STRING, A),
        ("general.name", gguf.T_STRING, f"ebb synth {fam} {info.get('preset')} seed {info.get('seed')}"),
        ("general.file_type", gguf.T_UINT32, FILE_TYPE[kind]),
        ("general.alignment", gguf.T_UINT32, gguf.DEFAULT_ALIGNMENT),
        (f"{A}.vocab_size", gguf.T_UINT32, V),
        (f"{A}.context_length", gguf.T_UINT32, d["context_length"]),
        (f"{A}.embedding_length", gguf.T_UINT32, H),
        (f"{A}.block_count", gguf.T_UINT32, L),
        (f"{A}.feed_forward_length", gguf.T_UINT32, I),
        (f"{A}.attention.head_count", gguf.T_UINT32, nh),
        (f"{A}.attention.head_count_kv", gguf.T_UINT32, nkv),
        (f"{A}.attention.key_length", gguf.T_UINT32, hd),
        (f"{A}.attention.value_length", gguf.T_UINT32, hd),
        (f"{A}.rope.dimension_count", gguf.T_UINT32, hd),
        (f"{A}.rope.freq_base", gguf.T_FLOAT32, float(info["rope_theta"])),
        (f"{A}.attention.layer_norm_rms_epsilon", gguf.T_FLOAT32, float(eps)),
        ("tokenizer.ggml.model", gguf.T_STRING, "none"),
        ("tokenizer.ggml.bos_token_id", gguf.T_UINT32, int(gcfg["bos_token_id"])),
        ("tokenizer.ggml.eos_token_id", gguf.T_UINT32, int(eos)),
    ]
    size = gguf.write_gguf(out_path, meta, tensors)
    return {"gguf": out_path, "gguf_type": kind, "gguf_bytes": size, "tensors": len(tensors)}


def main(argv=None):
    ap = argparse.ArgumentParser(description="synth model folder -> llama.cpp GGUF (see the module doc)")
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--type", choices=sorted(FILE_TYPE), default="q4_0")
    a = ap.parse_args(argv)
    print(json.dumps(convert(a.model_dir, a.out, a.type)))


if __name__ == "__main__":
    main()
