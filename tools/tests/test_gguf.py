"""Tests for synth_model.py --gguf (tools/synth_gguf.py, tools/gguf.py) that need no llama.cpp.

The GGUF is read back here with a Q4_0 dequantizer written from the format (not with gguf.py's
packer), the ONNX weights with the onnx package, and the rotary conventions are applied in
numpy: the checks compare the function both files compute, not the converter with itself.
(bench/vs_llamacpp.py --check runs both engines on such files: ctest label bench.)

Run: /usr/bin/python3 -m pytest tools/tests -q
"""

import json
import os
import struct
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, TOOLS)

import synth_model as sm  # noqa: E402


# ---- independent readers ----------------------------------------------------------------------
def read_gguf(path):
    """Metadata and tensors (dequantized to float32, shaped [ne1, ne0]) of a GGUF v3 file, parsed
    from the spec: F32 = 0, F16 = 1, Q4_0 = 2 (18-byte blocks: fp16 d, qs[16] with
    value[j] = ((qs[j] & 15) - 8) * d and value[j + 16] = ((qs[j] >> 4) - 8) * d)."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode()
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    assert data[:4] == b"GGUF"
    pos = 4
    version, n_t, n_kv = take("I"), take("Q"), take("Q")
    assert version == 3
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("I"))
    infos = []
    for _ in range(n_t):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        infos.append((name, ne, take("I"), take("Q")))
    align = meta.get("general.alignment", 32)
    start = pos + (-pos) % align
    tensors = {}
    for name, ne, t, off in infos:
        assert off % align == 0, f"{name} is not aligned"
        n = int(np.prod(ne))
        o = start + off
        if t == 0:
            a = np.frombuffer(data, "<f4", n, o)
        elif t == 1:
            a = np.frombuffer(data, "<f2", n, o).astype(np.float32)
        elif t == 2:
            blocks = np.frombuffer(data, np.uint8, n // 32 * 18, o).reshape(-1, 18)
            d = blocks[:, :2].copy().view("<f2").astype(np.float32)
            qs = blocks[:, 2:]
            q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float32)  # [j] then [j + 16]
            a = ((q - 8) * d).reshape(-1)
        else:
            raise AssertionError(f"{name}: unexpected type {t}")
        tensors[name] = a.reshape(list(reversed(ne)) if len(ne) > 1 else ne)
    return meta, tensors


def onnx_matrices(folder):
    """The ONNX model's matmul weights as [N, K] float32 (int4 dequantized from MatMulNBits: B
    [N, ceil(K/block), block/2], byte j = q[2j] | q[2j+1] << 4, value (q - 8) * scale, the padding
    past K dropped; block and K from the node), plus other initializers."""
    m = onnx.load(os.path.join(folder, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    attrs = {n.input[1]: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
             for n in m.graph.node if n.op_type == "MatMulNBits"}
    out = {}
    for name, a in inits.items():
        if name.endswith("NBits.qweight"):
            n, nb, half = a.shape
            block, k = attrs[name]["block_size"], attrs[name]["K"]
            assert half * 2 == block and nb == -(-k // block)
            q = np.empty((n, nb, block), np.float32)
            q[:, :, 0::2] = a & 15
            q[:, :, 1::2] = a >> 4
            s = inits[name.replace("qweight", "scales")].reshape(n, nb, 1)
            out[name[:-len("NBits.qweight")]] = ((q - 8) * s).reshape(n, nb * block)[:, :k]
        elif name.endswith("MatMul.weight"):
            out[name[:-len(".weight")]] = a.T
        else:
            out[name] = a
    return m, out


def rope_half(x, pos, theta):
    """ebb / ORT (interleaved=0): pairs (i, i + d/2) rotated by pos * theta^(-2i/d)."""
    d = x.shape[-1]
    f = pos * theta ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(f), np.sin(f)
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def rope_adjacent(x, pos, theta):
    """llama.cpp's llama (normal rope): pairs (2i, 2i + 1) rotated by pos * theta^(-2i/d)."""
    d = x.shape[-1]
    f = pos * theta ** (-np.arange(0, d, 2) / d)
    c, s = np.cos(f), np.sin(f)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


# ---- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    base = tmp_path_factory.mktemp("gguf")
    out = {}
    # int4: the default block (128: K = 64 is one padded block, K = 128 one whole block), and
    # --block-size 32 (Q4_0's own) and 64
    for fam, prec, extra in (("llama", "int4", []), ("phi3", "int4", []), ("llama", "fp32", []),
                             ("llama", "int4-b32", ["--block-size", "32"]),
                             ("phi3", "int4-b64", ["--block-size", "64"])):
        d = str(base / f"{fam}-{prec}")
        sm.main(["--family", fam, "--preset", "tiny", "--precision", prec[:4], "--out", d, "--gguf", d + ".gguf"]
                + extra)
        out[(fam, prec)] = (d, d + ".gguf")
    return out


def layer_rows(fam, mats, i, nh, nkv, hd, inter):
    """ebb's per-layer matrices [N, K] under llama.cpp's names (phi3's fused rows split)."""
    p = f"model.layers.{i}."
    if fam == "phi3":
        qkv, gu = mats[p + "attn.qkv_proj.MatMul"], mats[p + "mlp.gate_up_proj.MatMul"]
        q, k, v = qkv[:nh * hd], qkv[nh * hd:(nh + nkv) * hd], qkv[(nh + nkv) * hd:]
        gate, up = gu[:inter], gu[inter:]
    else:
        q, k, v = (mats[p + f"attn.{x}_proj.MatMul"] for x in "qkv")
        gate, up = mats[p + "mlp.gate_proj.MatMul"], mats[p + "mlp.up_proj.MatMul"]
    return dict(attn_q=q, attn_k=k, attn_v=v, attn_output=mats[p + "attn.o_proj.MatMul"], ffn_gate=gate,
                ffn_up=up, ffn_down=mats[p + "mlp.down_proj.MatMul"])


# ---- tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fam,prec", [("llama", "int4"), ("phi3", "int4"), ("llama", "int4-b32"),
                                      ("phi3", "int4-b64")])
def test_q4_0_holds_the_same_values_and_rotary(pairs, fam, prec):
    folder, path = pairs[(fam, prec)]
    info = json.load(open(os.path.join(folder, "synth_info.json")))
    d = info["dims"]
    nh, nkv, hd, L = d["heads"], d["kv_heads"], d["head_size"], d["layers"]
    model, mats = onnx_matrices(folder)
    meta, t = read_gguf(path)

    # metadata = the graph's hyperparameters
    eps = [a.f for n in model.graph.node if n.op_type == "SkipSimplifiedLayerNormalization"
           for a in n.attribute if a.name == "epsilon"]
    assert meta["general.architecture"] == "llama" and meta["general.file_type"] == 2
    assert meta["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(eps[0], rel=1e-7)
    assert (meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"],
            meta["llama.rope.dimension_count"], meta["llama.block_count"]) == (nh, nkv, hd, L)
    assert meta["llama.rope.freq_base"] == info["rope_theta"]
    assert meta["llama.vocab_size"] == d["vocab"] == t["token_embd.weight"].shape[0]

    # exact copies: embedding, norms, lm_head, and every matrix whose rows rotary does not touch
    np.testing.assert_array_equal(t["token_embd.weight"], mats["model.embed_tokens.weight"])
    np.testing.assert_array_equal(t["output.weight"], mats["lm_head.MatMul"])
    np.testing.assert_array_equal(t["output_norm.weight"], mats[f"model.layers.{L}.final_norm_layernorm.weight"])
    rng = np.random.default_rng(0)
    for i in range(L):
        np.testing.assert_array_equal(t[f"blk.{i}.attn_norm.weight"], mats[f"model.layers.{i}.input_layernorm.weight"])
        np.testing.assert_array_equal(t[f"blk.{i}.ffn_norm.weight"],
                                      mats[f"model.layers.{i}.post_attention_layernorm.weight"])
        rows = layer_rows(fam, mats, i, nh, nkv, hd, d["intermediate"])
        for name in ("attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
            np.testing.assert_array_equal(t[f"blk.{i}.{name}.weight"], rows[name], err_msg=name)
        # q and k: the same values, reordered so that adjacent-pair rope on the GGUF's rows gives
        # the attention scores rotate_half rope gives on ebb's (every head, several positions)
        gq, gk = t[f"blk.{i}.attn_q.weight"], t[f"blk.{i}.attn_k.weight"]
        assert sorted(gq.ravel()) == sorted(rows["attn_q"].ravel())
        x = rng.standard_normal(d["hidden"])
        q_e, k_e = (rows["attn_q"] @ x).reshape(nh, hd), (rows["attn_k"] @ x).reshape(nkv, hd)
        q_g, k_g = (gq @ x).reshape(nh, hd), (gk @ x).reshape(nkv, hd)
        theta = info["rope_theta"]
        for pq, pk in ((0, 0), (5, 3), (700, 11)):
            s_e = np.einsum("hd,hd->h", rope_half(q_e, pq, theta), np.repeat(rope_half(k_e, pk, theta), nh // nkv, 0))
            s_g = np.einsum("hd,hd->h", rope_adjacent(q_g, pq, theta),
                            np.repeat(rope_adjacent(k_g, pk, theta), nh // nkv, 0))
            np.testing.assert_allclose(s_g, s_e, rtol=1e-9, atol=1e-9)
            if pq != pk:  # and the test would see a missing permutation
                s_wrong = np.einsum("hd,hd->h", rope_adjacent(q_e, pq, theta),
                                    np.repeat(rope_adjacent(k_e, pk, theta), nh // nkv, 0))
                assert not np.allclose(s_wrong, s_e, rtol=1e-3)


def test_f16_from_fp32_is_the_rounded_weights(pairs):
    folder, path = pairs[("llama", "fp32")]
    _, mats = onnx_matrices(folder)
    meta, t = read_gguf(path)
    assert meta["general.file_type"] == 1
    rows = layer_rows("llama", mats, 0, 4, 2, 16, 128)
    np.testing.assert_array_equal(t["blk.0.ffn_down.weight"], rows["ffn_down"].astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(t["output.weight"], mats["lm_head.MatMul"].astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(t["token_embd.weight"], mats["model.embed_tokens.weight"])  # F32


def test_gguf_rounds_int4_scales_to_fp16_only_when_asked(tmp_path, pairs):
    folder, _ = pairs[("llama", "int4")]
    m = onnx.load(os.path.join(folder, "model.onnx"))
    scales = [numpy_helper.to_array(t) for t in m.graph.initializer if t.name.endswith("NBits.scales")]
    assert scales and all(np.array_equal(s.astype(np.float16).astype(np.float32), s) for s in scales)
    plain = str(tmp_path / "plain")
    sm.main(["--family", "llama", "--preset", "tiny", "--precision", "int4", "--out", plain])
    m2 = onnx.load(os.path.join(plain, "model.onnx"))
    s2 = [numpy_helper.to_array(t) for t in m2.graph.initializer if t.name.endswith("NBits.scales")]
    assert not all(np.array_equal(s.astype(np.float16).astype(np.float32), s) for s in s2)
    assert "int4_scales" not in json.load(open(os.path.join(plain, "synth_info.json")))
    # fp32 models are unchanged by --gguf
    fp32 = str(tmp_path / "fp32")
    sm.main(["--family", "llama", "--preset", "tiny", "--out", fp32])
    assert open(os.path.join(fp32, "model.onnx"), "rb").read() == \
        open(os.path.join(pairs[("llama", "fp32")][0], "model.onnx"), "rb").read()


@pytest.mark.parametrize("argv, message", [
    (["--family", "qwen2"], "llama and phi3"),
    (["--family", "gpt2"], "llama and phi3"),
    (["--family", "llama", "--gguf-type", "q4_0"], "needs --precision int4"),
    (["--family", "llama", "--precision", "int4", "--block-size", "16"], "needs --block-size 32 or more"),
])
def test_gguf_refuses_what_it_cannot_write(tmp_path, argv, message):
    with pytest.raises(SystemExit) as e:
        sm.main(argv + ["--preset", "tiny", "--out", str(tmp_path / "m"), "--gguf", str(tmp_path / "m.gguf")])
    assert message in str(e.value)


def test_f16_from_int4_block_16(tmp_path):
    # block 16 cannot be Q4_0 (refused above) but f16 holds its dequantized values, rounded
    d = str(tmp_path / "b16")
    sm.main(["--family", "llama", "--preset", "tiny", "--precision", "int4", "--block-size", "16", "--out", d,
             "--gguf", d + ".gguf", "--gguf-type", "f16"])
    _, mats = onnx_matrices(d)
    _, t = read_gguf(d + ".gguf")
    rows = layer_rows("llama", mats, 0, 4, 2, 16, 128)
    np.testing.assert_array_equal(t["blk.0.ffn_down.weight"], rows["ffn_down"].astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(t["blk.0.attn_v.weight"], rows["attn_v"].astype(np.float16).astype(np.float32))
