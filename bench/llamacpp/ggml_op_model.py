#!/usr/bin/python3
"""Rewrites int4 MatMulNBits nodes as ebb.ggml.MatMulQ4_0 (libebb_ggml_matmul.so; issue 28 item 3).

  /usr/bin/python3 bench/llamacpp/ggml_op_model.py --model-dir IN_DIR --out OUT_DIR [--library SO]
  /usr/bin/python3 bench/llamacpp/ggml_op_model.py --onnx IN.onnx --out OUT.onnx

A node is replaced when it is com.microsoft MatMulNBits with bits 4, no zero_points / g_idx / bias
input, float scales, K % 32 == 0 and block_size 32 or 128 (the shapes ggml's Q4_0 holds exactly:
a 128-block's scale is given to each of its four 32-blocks). The new node keeps the name, input A
and output Y, has attributes K and N, and reads W: uint8 [N, K/32 * 18], ggml Q4_0 rows (fp16 d,
then 16 bytes: low nibbles = elements 0..15 of the block, high nibbles = 16..31; value d * (q - 8),
MatMulNBits' symmetric zero point 8). Q4_0 stores d as fp16: scales that do not round-trip are
rounded, and the largest relative scale error is printed. Other nodes are kept as they are; B and
scales initializers no other node reads are dropped. Prints how many nodes were replaced and, per
node left, why.

--model-dir: a folder as tools/synth_model.py writes it (genai_config.json, the decoder's .onnx,
its external data). OUT_DIR gets the rewritten graph (external data in model.onnx.data, 4096-byte
aligned so ORT can mmap it, when the weights exceed 256 MiB), every other file of IN_DIR copied,
the library (--library; default: build/release/bench/llamacpp/libebb_ggml_matmul.so) copied in,
and in genai_config.json model.decoder.session_options.custom_ops_library = its name, which ebb
resolves against the folder: the folder is self-contained (`ebb serve` refuses a config that names
a library outside its folder), and the copy still finds ggml through its RUNPATH.
--onnx: one .onnx file (weights inline), e.g. bench/llamacpp/matmul_model.py's, for matmul_probe
--op-model.

Debian's python3 only (numpy, onnx 1.12).
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import load_external_data_for_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gguf  # noqa: E402

DOMAIN = "ebb.ggml"
OP = "MatMulQ4_0"
ALIGN = 4096
INLINE_BYTES = 1024
EXTERNAL_BYTES = 256 << 20
DEFAULT_LIBRARY = os.path.join(ROOT, "build", "release", "bench", "llamacpp", "libebb_ggml_matmul.so")


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def q4_0_rows(packed, scales, k, n, block):
    """MatMulNBits B (uint8 [N, nb, block/2], element 2i = low nibble) and scales ([N * nb]) as
    Q4_0 rows, uint8 [N, K/32 * 18], and the largest relative error of rounding scales to fp16."""
    nb = -(-k // block)
    codes = np.empty((n, nb * block), dtype=np.uint8)
    flat = packed.reshape(n, nb * block // 2)
    codes[:, 0::2] = flat & 0x0F
    codes[:, 1::2] = flat >> 4
    codes = codes[:, :k].reshape(n, k // 32, 32)  # padding past K (MatMulNBits' last block) dropped
    d = np.repeat(scales.reshape(n, nb).astype(np.float32), block // 32, axis=1)[:, : k // 32]
    d16 = d.astype(np.float16).astype(np.float32)
    nz = d != 0
    err = float(np.max(np.abs(d16[nz] - d[nz]) / np.abs(d[nz]))) if nz.any() else 0.0
    return gguf.q4_0_blocks(codes, d16), err


def rewrite(model):
    """Rewrites `model` in place. Returns (replaced, [(node name, why left)], max scale error)."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = {}
    for node in g.node:
        for x in node.input:
            uses[x] = uses.get(x, 0) + 1
    replaced, left, max_err = 0, [], 0.0
    new_inits, drop = [], set()
    nodes = list(g.node)
    for i, node in enumerate(nodes):
        if node.op_type != "MatMulNBits" or node.domain != "com.microsoft":
            continue
        k, n, bits, block = attr(node, "K"), attr(node, "N"), attr(node, "bits", 4), attr(node, "block_size")
        extra = [x for x in node.input[3:] if x]
        why = None
        if bits != 4:
            why = f"bits {bits}"
        elif extra:
            why = "has zero_points / g_idx / bias inputs " + ", ".join(extra)
        elif k is None or n is None or k % 32:
            why = f"K {k} is not a multiple of 32"
        elif block not in (32, 128):
            why = f"block_size {block}"
        elif node.input[1] not in inits or node.input[2] not in inits:
            why = "B or scales is not an initializer"
        elif inits[node.input[2]].data_type != TensorProto.FLOAT:
            why = "scales are not float (fp16 MatMulNBits)"
        if why:
            left.append((node.name, why))
            continue
        packed = numpy_helper.to_array(inits[node.input[1]])
        scales = numpy_helper.to_array(inits[node.input[2]])
        rows, err = q4_0_rows(packed, scales, k, n, block)
        max_err = max(max_err, err)
        wname = node.input[1] + "_q4_0"
        new_inits.append(numpy_helper.from_array(rows, wname))
        for x in node.input[1:3]:
            uses[x] -= 1
            if uses[x] == 0:
                drop.add(x)
        new = helper.make_node(OP, [node.input[0], wname], list(node.output), name=node.name, domain=DOMAIN, K=k, N=n)
        nodes[i] = new
        replaced += 1
    del g.node[:]
    g.node.extend(nodes)
    keep = [t for t in g.initializer if t.name not in drop]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    if replaced and not any(o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return replaced, left, max_err


def save(model, path, external):
    """Writes `model` to `path`; with `external`, tensors of 1 KiB or more go to path + '.data',
    each at a 4096-byte aligned offset (as tools/synth_model.py writes them, so ORT can mmap)."""
    data_name = os.path.basename(path) + ".data"
    if external:
        offset = 0
        with open(os.path.join(os.path.dirname(path), data_name), "wb") as f:
            for t in model.graph.initializer:
                if t.data_location == TensorProto.EXTERNAL or len(t.raw_data) < INLINE_BYTES:
                    continue
                pad = (-offset) % ALIGN
                f.write(b"\0" * pad)
                offset += pad
                raw = t.raw_data
                f.write(raw)
                t.ClearField("raw_data")
                t.data_location = TensorProto.EXTERNAL
                for key, v in (("location", data_name), ("offset", str(offset)), ("length", str(len(raw)))):
                    e = t.external_data.add()
                    e.key, e.value = key, v
                offset += len(raw)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def to_raw(model):
    """Every initializer as raw_data (onnx.load leaves some in typed fields), for save()."""
    for i, t in enumerate(model.graph.initializer):
        if not t.HasField("raw_data") and t.data_location != TensorProto.EXTERNAL:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))


def report(replaced, left, max_err):
    print(f"replaced {replaced} MatMulNBits node(s) with {DOMAIN}.{OP}; left {len(left)}")
    for name, why in left:
        print(f"  left {name}: {why}")
    if max_err:
        print(f"scales rounded to fp16: max relative scale error {max_err:.3e}")
    else:
        print("scales round-trip through fp16 exactly")


def cpu_has_amx():
    """Whether this CPU has AMX int8 tiles, which the op's speed depends on."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and " amx_int8" in line for line in f)
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-dir", help="model folder (genai_config.json + decoder .onnx)")
    src.add_argument("--onnx", help="one .onnx file with inline weights")
    ap.add_argument("--out", required=True, help="output folder (--model-dir) or .onnx path (--onnx)")
    ap.add_argument("--library", default=DEFAULT_LIBRARY, help="libebb_ggml_matmul.so for genai_config.json")
    ap.add_argument("--without-amx", action="store_true",
                    help="rewrite even though this CPU has no AMX (ggml's other kernels are slower "
                         "than ORT's MatMulNBits: docs/benchmarks.md)")
    a = ap.parse_args()
    if not a.without_amx and not cpu_has_amx():
        raise SystemExit("this CPU has no AMX (no amx_int8 in /proc/cpuinfo): ggml's Q4_0 kernels "
                         "without it are slower than ORT's MatMulNBits (docs/benchmarks.md), so "
                         "keep the original folder; --without-amx rewrites anyway (to measure)")
    if a.onnx:
        model = onnx.load(a.onnx)
        res = rewrite(model)
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        save(model, a.out, external=False)
        report(*res)
        return
    src_dir, out = os.path.abspath(a.model_dir), os.path.abspath(a.out)
    if src_dir == out:
        raise SystemExit("--out must differ from --model-dir")
    with open(os.path.join(src_dir, "genai_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    dec = cfg["model"]["decoder"]
    fname = dec.get("filename", "model.onnx")
    model = onnx.load(os.path.join(src_dir, fname), load_external_data=False)
    skip = {fname, fname + ".data"}
    had_external = False
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                skip.add(e.value)
                had_external = True
    load_external_data_for_model(model, src_dir)  # into raw_data, in memory
    to_raw(model)
    res = rewrite(model)
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src_dir)):
        p = os.path.join(src_dir, name)
        if name not in skip and os.path.isfile(p) and name != "genai_config.json":
            shutil.copy2(p, os.path.join(out, name))
    total = sum(len(t.raw_data) for t in model.graph.initializer)
    data = os.path.join(out, fname + ".data")
    if os.path.exists(data):
        os.remove(data)
    save(model, os.path.join(out, fname), external=had_external or total > EXTERNAL_BYTES)
    lib = os.path.abspath(a.library)
    if not os.path.isfile(lib):
        raise SystemExit(f"{lib} does not exist: build it (make bench-llamacpp, target "
                         "ebb_ggml_matmul) or name it with --library")
    shutil.copy2(lib, os.path.join(out, os.path.basename(lib)))
    dec.setdefault("session_options", {})["custom_ops_library"] = os.path.basename(lib)
    with open(os.path.join(out, "genai_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
    report(*res)
    print(f"wrote {out} (custom_ops_library {lib})")


if __name__ == "__main__":
    main()
