"""Tests for tools/synth_model.py and tools/reference_forward.py.

Run: /usr/bin/python3 -m pytest tools/tests -q
"""

import argparse
import filecmp
import json
import os
import sys

import numpy as np
import onnx
import pytest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, TOOLS)

import reference_forward as rf  # noqa: E402
import synth_model as sm  # noqa: E402

LLAMA_STYLE = ["llama", "phi3", "qwen2"]
VARIANTS = [(f, p, r) for f in LLAMA_STYLE for p in ("fp32", "int4") for r in ("fused", "unfused")] + \
    [("gpt2", "fp32", None), ("bert", "fp32", None)]


def vid(v):
    return "-".join(x for x in v if x)


def generate(out, family, precision="fp32", rotary=None, seed=0, preset="tiny", **dims):
    argv = ["--family", family, "--preset", preset, "--precision", precision, "--seed", str(seed), "--out", str(out)]
    if rotary:
        argv += ["--rotary-form", rotary]
    for k, v in dims.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    sm.main(argv)
    return str(out)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("synth")
    return {v: generate(base / vid(v), v[0], v[1], v[2]) for v in VARIANTS}


@pytest.fixture(scope="module")
def references(models):
    return {v: rf.Model(d) for v, d in models.items() if v[0] != "bert"}


def load_json(d, name):
    with open(os.path.join(d, name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("variant", VARIANTS, ids=vid)
def test_checker_passes(models, variant):
    onnx.checker.check_model(os.path.join(models[variant], "model.onnx"))


@pytest.mark.parametrize("variant", VARIANTS, ids=vid)
def test_config_matches_graph(models, variant):
    d = models[variant]
    cfg = load_json(d, "genai_config.json")["model"]
    m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    ins = {i.name: i for i in m.graph.input}
    outs = {o.name: o for o in m.graph.output}

    def dims(vi):
        return [x.dim_value if x.HasField("dim_value") else x.dim_param for x in vi.type.tensor_type.shape.dim]

    family = variant[0]
    assert cfg["type"] == family
    if family == "bert":
        enc = cfg["encoder"]
        assert set(enc["inputs"].values()) == set(ins)
        assert list(enc["outputs"].values()) == ["last_hidden_state"] == list(outs)
        assert dims(outs["last_hidden_state"])[-1] == enc["hidden_size"]
        for n in ins.values():
            assert n.type.tensor_type.elem_type == onnx.TensorProto.INT64
        return
    dec = cfg["decoder"]
    L = dec["num_hidden_layers"]
    names = dict(dec["inputs"])
    if family == "gpt2":
        fmt = names.pop("past_names")
        past = [fmt % i for i in range(L)]
        present = [dec["outputs"]["present_names"] % i for i in range(L)]
        for n in ("input_ids", "position_ids", "attention_mask"):  # like the onnxruntime-genai fixture
            assert ins[n].type.tensor_type.elem_type == onnx.TensorProto.INT32
        assert dims(ins["past_0"]) == [2, "batch_size", dec["num_key_value_heads"], "past_seq_len", dec["head_size"]]
        assert load_json(d, "genai_config.json")["search"]["past_present_share_buffer"] is False
    else:
        fmts = [names.pop("past_key_names"), names.pop("past_value_names")]
        past = [f % i for i in range(L) for f in fmts]
        present = [dec["outputs"][k] % i for i in range(L) for k in ("present_key_names", "present_value_names")]
        for n in names.values():
            assert ins[n].type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert ("position_ids" in names) == (variant[2] == "unfused") == ("position_ids" in ins)
        assert dims(ins[past[0]]) == ["batch_size", dec["num_key_value_heads"], "past_sequence_length", dec["head_size"]]
        assert dims(outs[present[0]]) == ["batch_size", dec["num_key_value_heads"], "total_sequence_length", dec["head_size"]]
        assert load_json(d, "genai_config.json")["search"]["past_present_share_buffer"] is True
        ops = {n.op_type for n in m.graph.node}
        assert "GroupQueryAttention" in ops
        assert ("RotaryEmbedding" in ops) == (variant[2] == "unfused")
        assert ("MatMulNBits" in ops) == (variant[1] == "int4")
        inits = {t.name: t for t in m.graph.initializer}
        for n in m.graph.node:
            if n.op_type == "MatMulNBits":
                a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
                assert (a["bits"], a["block_size"], a["accuracy_level"]) == (4, 128, 4)  # the default
                nb = -(-a["K"] // 128)  # K = 64 (hidden) is one block, zero-padded
                assert list(inits[n.input[1]].dims) == [a["N"], nb, 64]
                assert list(inits[n.input[2]].dims) == [a["N"] * nb]
    assert set(names.values()) | set(past) == set(ins)
    assert {dec["outputs"]["logits"]} | set(present) == set(outs)
    assert dims(outs["logits"])[-1] == cfg["vocab_size"]
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        for t in np.atleast_1d(cfg[key]):
            assert 0 <= t < cfg["vocab_size"]


@pytest.mark.parametrize("variant", VARIANTS, ids=vid)
def test_tokenizer_is_consistent(models, variant):
    d = models[variant]
    cfg = load_json(d, "genai_config.json")["model"]
    tok = load_json(d, "tokenizer.json")
    tcfg = load_json(d, "tokenizer_config.json")
    vocab = tok["model"]["vocab"]
    ids = sorted(vocab.values())
    assert ids == list(range(len(ids)))          # dense ids
    assert len(ids) == cfg["vocab_size"]         # tiny: the tokenizer covers the whole vocabulary
    for t in tok["added_tokens"]:
        assert vocab[t["content"]] == t["id"] and t["special"]
        assert tcfg["added_tokens_decoder"][str(t["id"])]["content"] == t["content"]
    if variant[0] == "bert":
        assert tok["model"]["type"] == "WordPiece" and tok["normalizer"]["type"] == "BertNormalizer"
        assert {"[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"} <= set(vocab)
        assert cfg["pad_token_id"] == vocab["[PAD]"]
        for c in "abcxyz019":
            assert c in vocab and "##" + c in vocab
    else:
        assert tok["model"]["type"] == "BPE" and tok["pre_tokenizer"]["type"] == "ByteLevel"
        b2u = sm.bytes_to_unicode()
        assert all(b2u[b] in vocab for b in range(256))
        for merge in tok["model"]["merges"]:
            a, b = merge.split(" ")
            assert a in vocab and b in vocab and a + b in vocab
        for s in ("<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"):
            assert s in vocab
        assert "<|assistant|>" in tcfg["chat_template"]
        assert vocab[tcfg["eos_token"]] in np.atleast_1d(cfg["eos_token_id"])


@pytest.mark.parametrize("family,precision", [("llama", "int4"), ("phi3", "fp32"), ("qwen2", "int4"),
                                              ("gpt2", "fp32"), ("bert", "fp32")])
def test_deterministic(tmp_path, family, precision):
    a = generate(tmp_path / "a", family, precision, seed=7)
    b = generate(tmp_path / "b", family, precision, seed=7)
    c = generate(tmp_path / "c", family, precision, seed=8)
    files = sorted(os.listdir(a))
    assert files == sorted(os.listdir(b))
    for f in files:
        assert filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False), f
    assert not filecmp.cmp(os.path.join(a, "model.onnx"), os.path.join(c, "model.onnx"), shallow=False)
    assert filecmp.cmp(os.path.join(a, "tokenizer.json"), os.path.join(c, "tokenizer.json"), shallow=False)


def test_external_data_is_valid_and_deterministic(tmp_path):
    a = generate(tmp_path / "a", "phi3", "int4", seed=3)
    sm.main(["--family", "phi3", "--preset", "tiny", "--precision", "int4", "--seed", "3",
             "--external-data", "always", "--out", str(tmp_path / "b")])
    p = os.path.join(tmp_path, "b", "model.onnx")
    onnx.checker.check_model(p)
    assert os.path.getsize(p + ".data") > 0
    ma, mb = onnx.load(os.path.join(a, "model.onnx")), onnx.load(p)
    for ta, tb in zip(ma.graph.initializer, mb.graph.initializer):
        assert ta.name == tb.name
        assert np.array_equal(onnx.numpy_helper.to_array(ta), onnx.numpy_helper.to_array(tb))
    n_external = 0
    for t in onnx.load(p, load_external_data=False).graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            assert len(t.raw_data) < 1024      # small constants stay inline (ORT shape inference)
            continue
        n_external += 1
        offset = int({e.key: e.value for e in t.external_data}["offset"])
        assert offset % 4096 == 0
    assert n_external > 10


@pytest.mark.parametrize("family", LLAMA_STYLE)
def test_rotary_forms_share_weights(models, family):
    """Fused and unfused forms differ only in graph structure, so they compute the same function."""
    for prec in ("fp32", "int4"):
        fused = onnx.load(os.path.join(models[(family, prec, "fused")], "model.onnx"))
        unfused = onnx.load(os.path.join(models[(family, prec, "unfused")], "model.onnx"))
        a = {t.name: t.raw_data for t in fused.graph.initializer}
        b = {t.name: t.raw_data for t in unfused.graph.initializer}
        assert {k: v for k, v in a.items() if not k.startswith("/model/constants")} == \
            {k: v for k, v in b.items() if not k.startswith("/model/constants")}


PROMPTS = [[5, 17, 42, 99, 7, 300], [8, 9, 10, 300], [11, 12], [600, 601, 602, 603, 604, 605, 606, 607]]


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v[0] != "bert" and v[2] != "unfused"], ids=vid)
def test_reference_outputs_depend_on_input_and_do_not_collapse(references, variant):
    model = references[variant]
    seqs, prompt_logits, _ = rf.greedy(model, PROMPTS, 8 + 32)
    for i in range(len(PROMPTS)):
        for j in range(i + 1, len(PROMPTS)):
            assert np.abs(prompt_logits[i] - prompt_logits[j]).max() > 1e-2
    # prompts 0 and 1 end in the same token: the context (attention) must change the distribution
    assert np.abs(prompt_logits[0] - prompt_logits[1]).max() > 0.05
    for s, p in zip(seqs, PROMPTS):
        gen = s[len(p):]
        assert len(gen) >= 32
        run = max(len(list(g)) for _, g in __import__("itertools").groupby(gen))
        assert run <= 2, gen                      # no token repeated back to back more than twice
        assert len(set(gen[:32])) >= 8, gen       # no collapse onto a few tokens
        for t in gen:
            assert 0 <= t < model.vocab


def test_int4_tracks_fp32(references):
    a = references[("llama", "fp32", "fused")]
    b = references[("llama", "int4", "fused")]
    for p in PROMPTS:
        la = a.forward(p)[-1]
        lb = b.forward(p)[-1]
        assert np.corrcoef(la, lb)[0, 1] > 0.95
        assert int(np.argmax(la)) in np.argsort(lb)[-5:]


def test_int8_activation_emulation_only_changes_int4_models(models):
    d = models[("qwen2", "int4", "fused")]
    auto, none = rf.Model(d), rf.Model(d, "none")
    assert auto.act_quant == "int8" and none.act_quant == "none"
    diff = np.abs(auto.forward(PROMPTS[2]) - none.forward(PROMPTS[2])).max()
    assert 0 < diff < 0.5
    assert rf.Model(models[("qwen2", "fp32", "fused")]).act_quant == "none"


def test_reference_cli_json(models, capsys):
    d = models[("phi3", "fp32", "unfused")]
    rf.main([d, "--input-ids", "1,2,3;4,5", "--max-length", "6", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert [len(s) for s in out["sequences"]] == [6, 6]
    assert out["sequences"][0][:3] == [1, 2, 3] and out["sequences"][1][:2] == [4, 5]
    assert len(out["prompt_logits"][0]) == 1024 and len(out["last_logits"][1]) == 1024


def test_presets_and_overrides():
    def cfg(*argv):
        ap = argparse.Namespace(family="phi3", preset="phi-3.5-mini", precision=None, seed=0, out="x",
                                layers=None, hidden=None, heads=None, kv_heads=None, head_size=None,
                                intermediate=None, vocab=None, context_length=None, rotary_form=None,
                                external_data="auto", block_size=None)
        for k, v in zip(argv[::2], argv[1::2]):
            setattr(ap, k, v)
        return sm.resolve_config(ap)

    c = cfg()
    assert (c["layers"], c["hidden"], c["heads"], c["kv_heads"], c["head_size"], c["intermediate"], c["vocab"],
            c["context_length"], c["precision"], c["rotary_form"]) == \
        (32, 3072, 32, 32, 96, 8192, 32064, 4096, "int4", "fused")
    assert cfg("head_size", 24)["rotary_form"] == "unfused"      # 24 % 16 != 0 -> unfused by default
    with pytest.raises(SystemExit):
        cfg("head_size", 24, "rotary_form", "fused")
    assert cfg("precision", "fp32", "layers", 1)["layers"] == 1
    assert c["block_size"] == 128 and cfg("block_size", 32)["block_size"] == 32
    assert "block_size" not in cfg("precision", "fp32")
    with pytest.raises(SystemExit, match="int4 only"):
        cfg("precision", "fp32", "block_size", 32)


def test_override_dims_generate(tmp_path):
    d = generate(tmp_path / "m", "llama", "int4", layers=1, hidden=96, heads=4, kv_heads=1, head_size=24,
                 intermediate=64, vocab=400, context_length=128)
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    info = load_json(d, "synth_info.json")
    assert info["rotary_form"] == "unfused" and info["dims"]["vocab"] == 400
    seqs, _, _ = rf.greedy(rf.Model(d), [[1, 2, 3]], 10)
    assert len(seqs[0]) == 10


def test_quantize_pads_k_to_whole_blocks():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 80)).astype(np.float32)
    packed, scales = sm.quantize_int4_rows(w, 64)
    assert packed.shape == (3, 2, 32) and scales.shape == (3, 2)
    q = np.empty((3, 2, 64), np.uint8)
    q[:, :, 0::2], q[:, :, 1::2] = packed & 15, packed >> 4
    assert (q[:, 1, 16:] == 8).all()  # the padding past K = 80 is code 8 (value 0)
    np.testing.assert_allclose(scales[:, 1], np.abs(w[:, 64:]).max(axis=1) / 7, rtol=1e-6)
    deq = ((q.astype(np.float32) - 8) * scales[:, :, None]).reshape(3, 128)[:, :80]
    assert np.abs(deq - w).max() <= scales.max() / 2 + 1e-6


@pytest.mark.parametrize("block", [16, 32, 64, 256])
def test_block_size_reaches_the_graph_and_the_reference(tmp_path, block):
    d = generate(tmp_path / "m", "llama", "int4", block_size=block)
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    info = load_json(d, "synth_info.json")
    assert info["int4_block_size"] == block and info["script_version"] == sm.SCRIPT_VERSION
    m = onnx.load(os.path.join(d, "model.onnx"))
    sizes = {onnx.helper.get_attribute_value(a) for n in m.graph.node if n.op_type == "MatMulNBits"
             for a in n.attribute if a.name == "block_size"}
    assert sizes == {block}
    ref = rf.Model(d)
    assert set(ref.block_size.values()) == {block}
    # int4 at any block size still tracks the fp32 model of the same seed
    f = rf.Model(generate(tmp_path / "f", "llama", "fp32"))
    la, lb = f.forward(PROMPTS[0])[-1], ref.forward(PROMPTS[0])[-1]
    assert np.corrcoef(la, lb)[0, 1] > 0.95


def test_int8_activation_blocks_pad_a_partial_block():
    x = np.arange(1, 81, dtype=np.float32).reshape(1, 80)
    y = rf.quantize_int8_blocks(x, 64)
    assert y.shape == x.shape
    np.testing.assert_allclose(y[0, 64:], rf.quantize_int8_blocks(x[:, 64:], 16)[0])  # its own absmax


def test_block_size_is_refused_when_it_does_not_apply(tmp_path):
    with pytest.raises(SystemExit, match="int4 only"):
        generate(tmp_path / "m", "llama", "fp32", block_size=32)
    with pytest.raises(SystemExit):  # argparse: not one of 16, 32, 64, 128, 256
        generate(tmp_path / "m", "llama", "int4", block_size=48)
