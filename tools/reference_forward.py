#!/usr/bin/python3
"""Pure NumPy reference forward pass for synthetic (tools/synth_model.py) model folders.

  tools/reference_forward.py MODEL_DIR --input-ids 1,2,3[;4,5] --max-length N [--json]
                             [--act-quant none|int8]
  tools/reference_forward.py BERT_DIR --input-ids 2,5,3[;2,6,7,3] --embed

Reads genai_config.json and the ONNX initializers (never the nodes' math), runs greedy decoding
for every row and prints the full sequences (prompt + generated, max_length tokens in total, as in
onnxruntime-genai; EOS does not stop it). --json prints
  {"input_ids": [[...], ...], "max_length": N, "act_quant": "none"|"int8",
   "sequences": [[...], ...], "prompt_logits": [[vocab floats of the last prompt token], ...],
   "last_logits": [[vocab floats of the step that chose the last token], ...]}

Families: llama, phi3, qwen2 (GroupQueryAttention style; both rotary forms compute the same thing;
fp32 and int4 MatMulNBits weights, dequantized like ORT: w = (nibble - 8) * scale, low nibble first,
in blocks of each node's block_size along K (B [N, ceil(K/block), block/2]; when K is not a multiple
of the block, the padding past K is dropped)) and gpt2 (combined-KV layout). Rows of a batch are independent sequences:
this is what ORT's CPU GroupQueryAttention computes for right-padded rows, where only
sum(attention_mask[b]) matters per row. --act-quant int8 additionally rounds the activations of
each int4 MatMul to int8 per block of the node's block_size (scale = absmax/127; a last partial
block is quantized over its K % block elements), like MatMulNBits with
accuracy_level 4 on CPU (ORT's MLAS quantizes A to int8 per block; with this the reference matches
ORT 1.29 to ~1e-6 instead of ~3e-2); the default "auto" does so when the model's MatMulNBits nodes
have accuracy_level 4, "none" keeps fp32 activations.

bert (encoder, --embed): each row alone (no padding), BERT post-norm layers as synth_model.py
writes them (Attention with packed qkv weights, bidirectional; exact erf Gelu; LayerNorm eps 1e-12);
prints {"input_ids": rows, "hidden_size": H, "mean": [...], "cls": [...], "max": [...],
"mean_sqrt_len": [...], "weightedmean": [...], and each KIND + "_normalized"} (one vector per row,
pooled over all the row's tokens as sentence-transformers' Pooling module does).

This file deliberately shares no code with synth_model.py: it is the independent reference.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


class Model:
    def __init__(self, model_dir, act_quant="auto"):
        self.dir = model_dir
        with open(os.path.join(model_dir, "genai_config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        m = self.config["model"]
        self.type = m["type"]
        if self.type == "bert":
            enc = m["encoder"]
            self.layers = enc["num_hidden_layers"]
            self.heads = enc["num_attention_heads"]
            self.head_size = enc["head_size"]
            model = onnx.load(os.path.join(model_dir, enc["filename"]))
            self.w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
            return
        dec = m["decoder"]
        self.layers = dec["num_hidden_layers"]
        self.head_size = dec["head_size"]
        self.heads = dec.get("num_attention_heads", dec["num_key_value_heads"])
        self.kv_heads = dec["num_key_value_heads"]
        self.vocab = m["vocab_size"]
        self.act_quant = act_quant
        model = onnx.load(os.path.join(model_dir, dec["filename"]))
        self.w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.block_size = {}
        self.nbits_k = {}
        for n in model.graph.node:
            if n.op_type == "MatMulNBits":
                attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
                self.block_size[n.input[1]] = attrs["block_size"]  # required by the op's schema
                self.nbits_k[n.input[1]] = attrs["K"]
                if act_quant == "auto" and attrs.get("accuracy_level", 0) == 4:
                    self.act_quant = "int8"
        if self.act_quant == "auto":
            self.act_quant = "none"
        self.eps = 9.999999747378752e-06
        self._mm = {}

    # ---- weights
    def matmul_weight(self, base):
        """Returns (W [K, N] float32, quantized?)."""
        if base in self._mm:
            return self._mm[base]
        if base + ".weight" in self.w:
            r = (self.w[base + ".weight"].astype(np.float32), False)
        elif base + "NBits.qweight" in self.w:
            q = self.w[base + "NBits.qweight"]
            n, nb, half = q.shape
            bs = half * 2
            if bs != self.block_size[base + "NBits.qweight"]:
                raise ValueError(f"{base}: B's blob is {half} bytes, not block_size / 2")
            k = self.nbits_k[base + "NBits.qweight"]
            s = self.w[base + "NBits.scales"].astype(np.float32).reshape(n, nb)
            vals = np.empty((n, nb, bs), dtype=np.float32)
            vals[:, :, 0::2] = (q & 0x0F).astype(np.float32)
            vals[:, :, 1::2] = (q >> 4).astype(np.float32)
            if base + "NBits.zero_points" in self.w:
                raise NotImplementedError("zero_points")
            deq = (vals - 8.0) * s[:, :, None]
            r = (deq.reshape(n, nb * bs)[:, :k].T.copy(), True)  # drop the padding past K
        else:
            raise KeyError(f"no weights for {base}")
        self._mm[base] = r
        return r

    def mm(self, x, base):
        w, quant = self.matmul_weight(base)
        if quant and self.act_quant == "int8":
            x = quantize_int8_blocks(x, self.block_size[base + "NBits.qweight"])
        return (x.astype(np.float32) @ w).astype(np.float32)

    # ---- forward for one row, full recompute; returns logits [S, V]
    def forward(self, ids):
        if self.type == "gpt2":
            return self.forward_gpt2(ids)
        return self.forward_llama(ids)

    def rms(self, x, w):
        x = x.astype(np.float32)
        return (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(self.eps)) * w).astype(np.float32)

    def rope(self, x, n_heads, positions):
        # x [S, n_heads*hd], non-interleaved (rotate-half) with caches [ctx, hd/2]
        hd = self.head_size
        cos = self.w["cos_cache"][positions][:, None, :]
        sin = self.w["sin_cache"][positions][:, None, :]
        rd = cos.shape[-1] * 2
        x = x.reshape(len(positions), n_heads, hd)
        x1, x2 = x[..., : rd // 2], x[..., rd // 2: rd]
        out = x.copy()
        out[..., : rd // 2] = x1 * cos - x2 * sin
        out[..., rd // 2: rd] = x2 * cos + x1 * sin
        return out.reshape(len(positions), n_heads * hd).astype(np.float32)

    def attention(self, q, k, v, n_heads, n_kv):
        # q [S, nh*hd], k/v [S, nkv*hd]; causal; head h uses kv head h // (nh / nkv)
        S, hd = q.shape[0], self.head_size
        q = q.reshape(S, n_heads, hd).transpose(1, 0, 2)
        k = k.reshape(S, n_kv, hd).transpose(1, 0, 2)
        v = v.reshape(S, n_kv, hd).transpose(1, 0, 2)
        rep = n_heads // n_kv
        k = np.repeat(k, rep, axis=0)
        v = np.repeat(v, rep, axis=0)
        s = (q @ k.transpose(0, 2, 1)) * np.float32(1.0 / math.sqrt(hd))
        s = s + np.triu(np.full((S, S), -np.inf, dtype=np.float32), 1)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p = p / p.sum(axis=-1, keepdims=True)
        o = (p @ v).transpose(1, 0, 2).reshape(S, n_heads * hd)
        return o.astype(np.float32)

    def forward_llama(self, ids):
        w = self.w
        S = len(ids)
        pos = np.arange(S)
        nh, nkv, hd = self.heads, self.kv_heads, self.head_size
        x = w["model.embed_tokens.weight"][np.asarray(ids)].astype(np.float32)
        residual = x
        h = self.rms(x, w["model.layers.0.input_layernorm.weight"])
        for i in range(self.layers):
            p = f"/model/layers.{i}/attn"
            if self.type == "phi3":
                qkv = self.mm(h, f"{p}/qkv_proj/MatMul"[1:].replace("/", "."))
                q, k, v = np.split(qkv, [nh * hd, nh * hd + nkv * hd], axis=-1)
            else:
                q = self.mm(h, f"{p}/q_proj/MatMul"[1:].replace("/", "."))
                k = self.mm(h, f"{p}/k_proj/MatMul"[1:].replace("/", "."))
                v = self.mm(h, f"{p}/v_proj/MatMul"[1:].replace("/", "."))
                if f"model.layers.{i}.attn.q_proj.Add.bias" in w:
                    q = q + w[f"model.layers.{i}.attn.q_proj.Add.bias"]
                    k = k + w[f"model.layers.{i}.attn.k_proj.Add.bias"]
                    v = v + w[f"model.layers.{i}.attn.v_proj.Add.bias"]
            q = self.rope(q, nh, pos)
            k = self.rope(k, nkv, pos)
            a = self.attention(q, k, v, nh, nkv)
            o = self.mm(a, f"model.layers.{i}.attn.o_proj.MatMul")
            residual = (residual + o).astype(np.float32)
            h = self.rms(residual, w[f"model.layers.{i}.post_attention_layernorm.weight"])
            if self.type == "phi3":
                gu = self.mm(h, f"model.layers.{i}.mlp.gate_up_proj.MatMul")
                gate, up = np.split(gu, 2, axis=-1)
            else:
                gate = self.mm(h, f"model.layers.{i}.mlp.gate_proj.MatMul")
                up = self.mm(h, f"model.layers.{i}.mlp.up_proj.MatMul")
            act = gate * (1.0 / (1.0 + np.exp(-gate)))
            down = self.mm((act * up).astype(np.float32), f"model.layers.{i}.mlp.down_proj.MatMul")
            residual = (residual + down).astype(np.float32)
            nxt = f"model.layers.{i + 1}.input_layernorm.weight" if i + 1 < self.layers else \
                f"model.layers.{self.layers}.final_norm_layernorm.weight"
            h = self.rms(residual, w[nxt])
        return self.mm(h, "lm_head.MatMul")

    def forward_gpt2(self, ids):
        w = self.w
        S = len(ids)
        H = w["transformer.wte.weight"].shape[1]
        nh, hd = self.heads, self.head_size

        def ln(x, name):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return ((x - mu) / np.sqrt(var + np.float32(self.eps)) * w[name + ".weight"] + w[name + ".bias"]).astype(np.float32)

        x = (w["transformer.wte.weight"][np.asarray(ids)] + w["transformer.wpe.weight"][np.arange(S)]).astype(np.float32)
        for i in range(self.layers):
            p = f"transformer.h.{i}"
            h = ln(x, f"{p}.ln_1")
            qkv = h @ w[f"{p}.attn.c_attn.weight"] + w[f"{p}.attn.c_attn.bias"]
            q, k, v = np.split(qkv, 3, axis=-1)
            a = self.attention(q, k, v, nh, nh)
            x = x + self.mm(a, f"transformer.h.{i}.attn.c_proj.MatMul") + w[f"{p}.attn.c_proj.bias"]
            h = ln(x, f"{p}.ln_2")
            f = self.mm(h, f"transformer.h.{i}.mlp.c_fc.MatMul") + w[f"{p}.mlp.c_fc.bias"]
            f = 0.5 * f * (1.0 + np.tanh(np.float32(math.sqrt(2.0 / math.pi)) * (f + 0.044715 * f ** 3)))
            x = (x + self.mm(f.astype(np.float32), f"transformer.h.{i}.mlp.c_proj.MatMul") + w[f"{p}.mlp.c_proj.bias"]).astype(np.float32)
        return self.mm(ln(x, "transformer.ln_f"), "lm_head.MatMul")


    def forward_bert(self, ids):
        """last_hidden_state [S, H] of one row, every token attended (no padding)."""
        w = self.w
        S = len(ids)
        nh, hd = self.heads, self.head_size
        erf = np.vectorize(math.erf, otypes=[np.float64])

        def ln(x, name):
            x = x.astype(np.float64)
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / np.sqrt(var + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

        x = (w["embeddings.word_embeddings.weight"][np.asarray(ids)].astype(np.float64)
             + w["embeddings.token_type_embeddings.weight"][np.zeros(S, dtype=np.int64)]
             + w["embeddings.position_embeddings.weight"][np.arange(S)])
        x = ln(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            qkv = x @ w[f"{p}.attention.self.qkv.weight"] + w[f"{p}.attention.self.qkv.bias"]
            q, k, v = np.split(qkv, 3, axis=-1)
            q = q.reshape(S, nh, hd).transpose(1, 0, 2)
            k = k.reshape(S, nh, hd).transpose(1, 0, 2)
            v = v.reshape(S, nh, hd).transpose(1, 0, 2)
            s = (q @ k.transpose(0, 2, 1)) / math.sqrt(hd)
            s = s - s.max(axis=-1, keepdims=True)
            pr = np.exp(s)
            pr = pr / pr.sum(axis=-1, keepdims=True)
            a = (pr @ v).transpose(1, 0, 2).reshape(S, nh * hd)
            o = a @ w[f"{p}.attention.output.dense.MatMul.weight"] + w[f"{p}.attention.output.dense.bias"]
            x = ln(x + o, f"{p}.attention.output.LayerNorm")
            f = x @ w[f"{p}.intermediate.dense.MatMul.weight"] + w[f"{p}.intermediate.dense.bias"]
            f = 0.5 * f * (1.0 + erf(f / math.sqrt(2.0)))
            f = f @ w[f"{p}.output.dense.MatMul.weight"] + w[f"{p}.output.dense.bias"]
            x = ln(x + f, f"{p}.output.LayerNorm")
        return x


def embed(model, rows):
    """Each row alone (no padding), pooled as sentence-transformers' Pooling module does:
    mean, cls, max (element-wise over tokens), mean_sqrt_len (sum / sqrt(n)) and weightedmean
    (token t, 1-based, weighs t: sum t*h_t / sum t); each also L2-normalised."""
    kinds = ("mean", "cls", "max", "mean_sqrt_len", "weightedmean")
    out = {"input_ids": rows}
    for kind in kinds:
        out[kind] = []
        out[kind + "_normalized"] = []
    for ids in rows:
        h = model.forward_bert(list(ids))
        n = h.shape[0]
        weights = np.arange(1, n + 1, dtype=np.float64)[:, None]
        out["hidden_size"] = int(h.shape[1])
        pooled = {"mean": h.mean(axis=0), "cls": h[0], "max": h.max(axis=0),
                  "mean_sqrt_len": h.sum(axis=0) / np.sqrt(n),
                  "weightedmean": (h * weights).sum(axis=0) / weights.sum()}
        for kind in kinds:
            v = pooled[kind]
            out[kind].append(v.tolist())
            out[kind + "_normalized"].append((v / np.linalg.norm(v)).tolist())
    return out


def quantize_int8_blocks(x, block):
    x = np.asarray(x, dtype=np.float32)
    shp = x.shape
    k = shp[-1]
    nb = (k + block - 1) // block
    x2 = x.reshape(-1, k)
    if nb * block != k:  # zero padding leaves a partial block's absmax as it is
        x2 = np.concatenate([x2, np.zeros((x2.shape[0], nb * block - k), dtype=np.float32)], axis=1)
    xb = x2.reshape(-1, nb, block)
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    scale = amax / np.float32(127.0)
    inv = np.where(scale > 0, 1.0 / np.where(scale > 0, scale, 1), 0).astype(np.float32)
    q = np.clip(np.rint(xb * inv), -128, 127)
    return (q * scale).reshape(-1, nb * block)[:, :k].reshape(shp).astype(np.float32)


def greedy(model, rows, max_length):
    seqs, prompt_logits, last_logits = [], [], []
    for ids in rows:
        ids = list(ids)
        logits = model.forward(ids)[-1]
        prompt_logits.append(logits)
        last = logits
        while len(ids) < max_length:
            last = logits
            ids.append(int(np.argmax(logits)))
            if len(ids) < max_length:
                logits = model.forward(ids)[-1]
        seqs.append(ids)
        last_logits.append(last)
    return seqs, prompt_logits, last_logits


def parse_rows(s):
    return [[int(t) for t in row.split(",") if t.strip() != ""] for row in s.split(";") if row.strip() != ""]


def main(argv=None):
    ap = argparse.ArgumentParser(description="NumPy reference greedy decoding for synthetic models")
    ap.add_argument("model_dir")
    ap.add_argument("--input-ids", required=True, help="rows separated by ';', ids by ','")
    ap.add_argument("--max-length", type=int, help="total length incl. the prompt (decoders)")
    ap.add_argument("--embed", action="store_true", help="bert: pooled embeddings as JSON")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--act-quant", choices=("auto", "none", "int8"), default="auto",
                    help="auto: int8 for MatMulNBits nodes with accuracy_level 4 (ORT CPU), else none")
    args = ap.parse_args(argv)
    model = Model(args.model_dir, args.act_quant)
    rows = parse_rows(args.input_ids)
    if args.embed or model.type == "bert":
        json.dump(embed(model, rows), sys.stdout)
        sys.stdout.write("\n")
        return
    if args.max_length is None:
        ap.error("--max-length is required for decoders")
    seqs, pl, ll = greedy(model, rows, args.max_length)
    if args.json:
        json.dump({"input_ids": rows, "max_length": args.max_length, "act_quant": model.act_quant,
                   "sequences": seqs, "prompt_logits": [l.tolist() for l in pl],
                   "last_logits": [l.tolist() for l in ll]}, sys.stdout)
        sys.stdout.write("\n")
    else:
        for s in seqs:
            print(",".join(map(str, s)))


if __name__ == "__main__":
    main()
