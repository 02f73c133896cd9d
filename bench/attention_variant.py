#!/usr/bin/python3
"""Writes a copy of a decoder model folder whose GroupQueryAttention nodes run differently, to
measure two levers on ORT's CPU attention (issue 28; docs/benchmarks.md, "AMD EPYC with AVX-512 /
VNNI and no AMX"). Same weights, same tokens in exact arithmetic.

  --variant scale-in-q   Q is multiplied by GQA's softmax scale before the node (a Mul by a
                         constant: scalar for separate Q/K/V, per channel for packed QKV, the
                         K and V channels by 1) and the node's `scale` becomes 1.0. Why: ORT's
                         CPU GQA computes Q.K' with MlasGemm(alpha = scale), and MLAS takes its
                         no-packing M = 1 path only when alpha == 1 (sgemm.cpp); with the scale
                         folded, every decode step's Q.K' takes that path.
  --variant fp16-kv      GQA runs in fp16: Casts to fp16 on Q, K, V and the cos/sin caches, a
                         Cast back to fp32 on the output, and the past/present KV graph inputs
                         and outputs become float16 (half the KV bytes; ebb sizes its KV cache
                         from the graph's types).

  /usr/bin/python3 bench/attention_variant.py --variant scale-in-q SRC_DIR DST_DIR

Debian's python3 with python3-onnx and python3-numpy. The folder's graph must keep its weights
inside model.onnx or name external data that is copied along (the whole folder is copied).
"""

import argparse
import json
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def scale_in_q(graph, head_size):
    nodes, n = [], 0
    for node in graph.node:
        if node.op_type == "GroupQueryAttention" and node.domain == "com.microsoft":
            attrs = {a.name: a for a in node.attribute}
            nh = helper.get_attribute_value(attrs["num_heads"])
            nkv = helper.get_attribute_value(attrs["kv_num_heads"])
            scale = helper.get_attribute_value(attrs["scale"]) if "scale" in attrs else 0.0
            if scale == 0.0:
                scale = 1.0 / math.sqrt(head_size)  # the op's default
            packed = len(node.input) < 2 or node.input[1] == ""
            if packed:
                vec = np.ones((nh + 2 * nkv) * head_size, dtype=np.float32)
                vec[: nh * head_size] = scale
            else:
                vec = np.array([scale], dtype=np.float32)
            const, out = f"{node.name}/ebb_q_scale", f"{node.name}/ebb_q_scaled"
            graph.initializer.append(numpy_helper.from_array(vec, const))
            nodes.append(helper.make_node("Mul", [node.input[0], const], [out], name=out + "/Mul"))
            node.input[0] = out
            if "scale" in attrs:
                attrs["scale"].f = 1.0
            else:
                node.attribute.append(helper.make_attribute("scale", 1.0))
            n += 1
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return n


def fp16_kv(graph):
    nodes, casts, kv = [], {}, set()

    def cast(name):
        if name not in casts:
            casts[name] = f"{name}/ebb_fp16"
            nodes.append(helper.make_node("Cast", [name], [casts[name]], to=TensorProto.FLOAT16,
                                          name=casts[name] + "/Cast"))
        return casts[name]

    n = 0
    for node in graph.node:
        if node.op_type == "GroupQueryAttention" and node.domain == "com.microsoft":
            ins = list(node.input)
            for j in (0, 1, 2, 7, 8):  # query, key, value, cos_cache, sin_cache
                if j < len(ins) and ins[j]:
                    ins[j] = cast(ins[j])
            kv.update(x for x in ins[3:5] if x)  # past_key, past_value
            kv.update(x for x in list(node.output)[1:3] if x)  # present_key, present_value
            del node.input[:]
            node.input.extend(ins)
            out = node.output[0]
            node.output[0] = out + "/ebb_fp16_out"
            nodes.append(node)
            nodes.append(helper.make_node("Cast", [node.output[0]], [out], to=TensorProto.FLOAT,
                                          name=out + "/ebb_fp32/Cast"))
            n += 1
            continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    for vi in list(graph.input) + list(graph.output):
        if vi.name in kv:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", required=True, choices=("scale-in-q", "fp16-kv"))
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args()
    if os.path.exists(a.dst):
        raise SystemExit(f"{a.dst} exists; give a new folder")
    cfg_path = os.path.join(a.src, "genai_config.json")
    if not os.path.isfile(cfg_path):
        raise SystemExit(f"{a.src}: no genai_config.json; give an onnxruntime-genai model folder")
    shutil.copytree(a.src, a.dst)
    with open(os.path.join(a.dst, "genai_config.json"), encoding="utf-8") as f:
        dec = json.load(f)["model"]["decoder"]
    path = os.path.join(a.dst, dec["filename"])
    model = onnx.load(path, load_external_data=False)
    n = scale_in_q(model.graph, dec["head_size"]) if a.variant == "scale-in-q" else fp16_kv(model.graph)
    if n == 0:
        shutil.rmtree(a.dst)
        raise SystemExit(f"{path}: no com.microsoft GroupQueryAttention node to rewrite")
    onnx.save(model, path)
    print(f"{a.dst}: {a.variant}, {n} GroupQueryAttention nodes rewritten")


if __name__ == "__main__":
    main()
