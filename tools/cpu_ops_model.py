#!/usr/bin/python3
"""Moves MatMulNBits and GroupQueryAttention nodes to the domain ebb.cpu (libebb_cpu_ops.so,
ebb's own CPU kernels; issue 40 items 2 and 3).

  /usr/bin/python3 tools/cpu_ops_model.py --model-dir IN_DIR --out OUT_DIR [--ops matmul,gqa]
  /usr/bin/python3 tools/cpu_ops_model.py --onnx IN.onnx --out OUT.onnx [--ops matmul]

The ops take com.microsoft's own inputs and attributes, so a node is rewritten by changing its
domain only, and the weights are not touched. --ops (default matmul,gqa) names the kinds moved:
  matmul  MatMulNBits with bits 4, a power-of-two block_size from 32 and no g_idx or bias input
          (the kernel quantizes A to int8 as MLAS does for accuracy_level 4; a node with another
          accuracy level is moved too, and the levels are reported)
  gqa     GroupQueryAttention with no input past sin_cache (position_ids, attention_bias,
          head_sink); the kernel itself checks the shapes (head size a multiple of 16 up to 64)
Nodes left com.microsoft are listed with the reason. The folder is for the machine that writes
it: an op whose kernel this CPU cannot run is not moved (matmul needs AVX2 + FMA or AVX-512
VNNI, gqa AVX2 + FMA + F16C), unless --any-cpu.
--kv-fp16 (with gqa) also declares the moved attention nodes' past and present graph inputs and
outputs float16: the KV cache ebb allocates for the folder is then fp16 (half the bytes a decode
step streams), which ebb.cpu.GroupQueryAttention reads and writes; ORT's kernel could not take
the fp32 query with an fp16 cache, so every GroupQueryAttention node must be moved.

--model-dir: a folder as tools/synth_model.py writes it. OUT_DIR gets the rewritten graph, every
other file of IN_DIR hard-linked (copied across file systems), the library (--library; default
build/release/src/cpu_ops/libebb_cpu_ops.so) copied in, and in genai_config.json
model.decoder.session_options.custom_ops_library = its name.
--onnx: one .onnx file (weights inline), e.g. bench/llamacpp/matmul_model.py's, for
matmul_probe --op-model.

Debian's python3 only (onnx).
"""

import argparse
import json
import os
import shutil

import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DOMAIN = "ebb.cpu"
DEFAULT_LIBRARY = os.path.join(ROOT, "build", "release", "src", "cpu_ops", "libebb_cpu_ops.so")


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def cpu_flags():
    """This CPU's flags from /proc/cpuinfo (empty when unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def rewrite(model, ops):
    """Moves the eligible nodes of the kinds in `ops`; returns ({op_type: moved}, [(node, why left)],
    {accuracy_level: count} of the moved MatMulNBits)."""
    moved, left, levels = {}, [], {}
    inits = {t.name: t for t in model.graph.initializer}
    value_types = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    for node in model.graph.node:
        if node.domain != "com.microsoft":
            continue
        why = None
        if node.op_type == "MatMulNBits" and "matmul" in ops:
            bits, block = attr(node, "bits", 4), attr(node, "block_size")
            if bits != 4:
                why = f"bits {bits}"
            elif not block or block < 32 or block & (block - 1):
                why = f"block_size {block} (the kernel needs a power of two from 32)"
            elif any(x for x in node.input[4:]):
                why = "g_idx or bias input"
            elif node.input[2] in inits and inits[node.input[2]].data_type != TensorProto.FLOAT:
                why = "scales not float32 (the kernel takes fp32 activations)"
            else:
                level = attr(node, "accuracy_level", 0)
                levels[level] = levels.get(level, 0) + 1
        elif node.op_type == "GroupQueryAttention" and "gqa" in ops:
            if any(x for x in node.input[9:]):
                why = "position_ids, attention_bias or head_sink input"
            elif value_types.get(node.input[3]) not in (None, TensorProto.FLOAT):
                why = "past_key not float32 (the kernel takes an fp32 query)"
        else:
            continue
        if why:
            left.append((node.name, why))
        else:
            node.domain = DOMAIN
            moved[node.op_type] = moved.get(node.op_type, 0) + 1
    if moved and not any(o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return moved, left, levels


def kv_to_fp16(model):
    """Declares the moved GroupQueryAttention nodes' past inputs and present outputs float16;
    returns how many graph values changed."""
    names = set()
    for node in model.graph.node:
        if node.op_type == "GroupQueryAttention":
            if node.domain != DOMAIN:
                raise SystemExit(f"--kv-fp16: node {node.name} stays com.microsoft, whose kernel needs "
                                 "the cache in the query's type")
            names.update(x for x in list(node.input[3:5]) + list(node.output[1:3]) if x)
    changed = 0
    for v in list(model.graph.input) + list(model.graph.output):
        if v.name in names:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
            changed += 1
    return changed


def report(moved, left, levels):
    print(f"moved to {DOMAIN}: {moved or 'nothing'}; left {len(left)}; accuracy_level of the moved "
          f"MatMulNBits: {levels}")
    for name, why in left:
        print(f"  left {name}: {why}")


def link_or_copy(src, dst):
    if os.path.exists(dst):
        os.remove(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-dir", help="model folder (genai_config.json + decoder .onnx)")
    src.add_argument("--onnx", help="one .onnx file")
    ap.add_argument("--out", required=True, help="output folder (--model-dir) or .onnx path (--onnx)")
    ap.add_argument("--library", default=DEFAULT_LIBRARY, help="libebb_cpu_ops.so for genai_config.json")
    ap.add_argument("--ops", default="matmul,gqa", help="comma list of matmul, gqa")
    ap.add_argument("--kv-fp16", action="store_true", help="an fp16 KV cache (needs gqa in --ops)")
    ap.add_argument("--any-cpu", action="store_true",
                    help="move the nodes even when this CPU cannot run their kernels")
    a = ap.parse_args()
    ops = set(a.ops.split(","))
    if not ops or ops - {"matmul", "gqa"}:
        ap.error(f"--ops takes matmul and/or gqa, got '{a.ops}'")
    if a.kv_fp16 and "gqa" not in ops:
        ap.error("--kv-fp16 needs gqa in --ops")
    # The folder is for this machine: an op whose kernel this CPU cannot run would fail its load.
    flags = cpu_flags()
    if not a.any_cpu and "matmul" in ops and not ({"avx2", "fma"} <= flags or
                                                   {"avx512f", "avx512bw", "avx512_vnni"} <= flags):
        print("matmul: skipped, this CPU has neither AVX2 + FMA nor AVX-512 VNNI (ebb.cpu.MatMulNBits "
              "needs one; --any-cpu moves the nodes anyway, for another machine)")
        ops.discard("matmul")
    if not a.any_cpu and "gqa" in ops and not ({"avx2", "fma", "f16c"} <= flags or "avx512f" in flags):
        raise SystemExit("this CPU lacks AVX2 + FMA + F16C, which ebb.cpu.GroupQueryAttention needs "
                         "(--any-cpu rewrites anyway, for another machine)")
    if a.onnx:
        model = onnx.load(a.onnx)
        res = rewrite(model, ops)
        onnx.save(model, a.out)
        report(*res)
        return
    src_dir, out = os.path.abspath(a.model_dir), os.path.abspath(a.out)
    if src_dir == out:
        raise SystemExit("--out must differ from --model-dir")
    lib = os.path.abspath(a.library)
    if not os.path.isfile(lib):
        raise SystemExit(f"{lib} does not exist: build it (make bench-llamacpp, target "
                         "ebb_cpu_ops, make build) or name it with --library")
    with open(os.path.join(src_dir, "genai_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    dec = cfg["model"]["decoder"]
    fname = dec.get("filename", "model.onnx")
    model = onnx.load(os.path.join(src_dir, fname), load_external_data=False)
    res = rewrite(model, ops)
    if a.kv_fp16:
        print(f"--kv-fp16: {kv_to_fp16(model)} past/present values declared float16")
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src_dir)):
        p = os.path.join(src_dir, name)
        if os.path.isfile(p) and name not in (fname, "genai_config.json"):
            link_or_copy(p, os.path.join(out, name))
    with open(os.path.join(out, fname), "wb") as f:
        f.write(model.SerializeToString())
    shutil.copy2(lib, os.path.join(out, os.path.basename(lib)))
    dec.setdefault("session_options", {})["custom_ops_library"] = os.path.basename(lib)
    with open(os.path.join(out, "genai_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
    report(*res)
    print(f"wrote {out} (custom_ops_library {lib})")


if __name__ == "__main__":
    main()
