#!/usr/bin/python3
"""Copies a synthesized model folder, changing its KV cache and logits to float16.

Usage: tools/fp16_io.py SRC_DIR DST_DIR

The graph computes in float32 as before: every float16 past input is Cast to float32 where the
graph reads it, and every present output and the logits are Cast to float16. This gives the
runtime a model whose KV cache and logits are float16 (as GPU exports are) while staying
runnable on ORT's CPU kernels. Deterministic; needs only python3-onnx.
"""
import json
import shutil
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((src / "genai_config.json").read_text())
    dec = cfg["model"]["decoder"]
    model = onnx.load(str(src / dec["filename"]))
    g = model.graph
    new_nodes = []
    for inp in g.input:
        if inp.name.startswith("past") and inp.type.tensor_type.elem_type == TensorProto.FLOAT:
            inp.type.tensor_type.elem_type = TensorProto.FLOAT16
            cast_out = inp.name + "_f32"
            for node in g.node:
                for i, name in enumerate(node.input):
                    if name == inp.name:
                        node.input[i] = cast_out
            new_nodes.append(helper.make_node("Cast", [inp.name], [cast_out], to=TensorProto.FLOAT,
                                              name="cast_" + inp.name))
    tail = []
    for out in g.output:
        if out.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        internal = out.name + "_f32"
        for node in g.node:
            for i, name in enumerate(node.output):
                if name == out.name:
                    node.output[i] = internal
        out.type.tensor_type.elem_type = TensorProto.FLOAT16
        tail.append(helper.make_node("Cast", [internal], [out.name], to=TensorProto.FLOAT16,
                                     name="cast_" + out.name))
    nodes = new_nodes + list(g.node) + tail
    del g.node[:]
    g.node.extend(nodes)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name != dec["filename"] and f.is_file():
            shutil.copyfile(f, dst / f.name)
    onnx.save(model, str(dst / dec["filename"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
